#include "ops/onednn.h"

#if SHOAL_HAVE_ONEDNN
#include "core/env_switch.h"

extern "C" void omp_set_num_threads(int);

namespace shoal {

bool OneDnnEnabled() {
  static const bool enabled = EnvSwitchOn("SHOAL_ONEDNN");
  return enabled;
}

void SetOneDnnThreads(int threads) { omp_set_num_threads(threads); }

}  // namespace shoal

#else  // no oneDNN in this build

namespace shoal {
bool OneDnnEnabled() { return false; }
void SetOneDnnThreads(int) {}
}  // namespace shoal

#endif
