#include "core/memory_tuning.h"

#include <malloc.h>

namespace shoal {

void KeepLargeAllocations() {
  // Every block from the heap, however large; freed memory stays with the
  // process (up to 1 GiB at the top of the heap) for the next step's messages.
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

}  // namespace shoal
