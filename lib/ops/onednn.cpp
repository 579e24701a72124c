#include "ops/onednn.h"

#if SHOAL_HAVE_ONEDNN
#include <cstdlib>
#include <cstring>

extern "C" void omp_set_num_threads(int);

namespace shoal {

bool OneDnnEnabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("SHOAL_ONEDNN");
    return !(v && (std::strcmp(v, "0") == 0 || std::strcmp(v, "off") == 0));
  }();
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
