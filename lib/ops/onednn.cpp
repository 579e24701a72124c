#include "ops/onednn.h"

#include <cstdlib>
#include <cstring>

#if SHOAL_HAVE_ONEDNN
extern "C" void omp_set_num_threads(int);
#endif

namespace shoal {

#if SHOAL_HAVE_ONEDNN
bool OneDnnEnabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("SHOAL_ONEDNN");
    return !(v && (std::strcmp(v, "0") == 0 || std::strcmp(v, "off") == 0));
  }();
  return enabled;
}

void SetOneDnnThreads(int threads) { omp_set_num_threads(threads); }
#else
bool OneDnnEnabled() { return false; }
void SetOneDnnThreads(int) {}
#endif

}  // namespace shoal
