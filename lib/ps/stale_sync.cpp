#include "ps/stale_sync.h"

#include <cstddef>
#include <limits>

namespace shoal {

uint64_t SlowestClock(const std::vector<uint64_t>& clocks, const std::vector<bool>& done) {
  uint64_t slowest = std::numeric_limits<uint64_t>::max();
  for (size_t w = 0; w < clocks.size(); ++w)
    if (!done[w] && clocks[w] < slowest) slowest = clocks[w];
  return slowest;
}

// Written without subtracting from `clock`, which may be below the slack.
bool SspReadable(uint64_t clock, uint64_t slowest, uint64_t staleness) {
  return slowest >= clock || clock - slowest <= staleness;
}

uint64_t SspStaleness(uint64_t clock, uint64_t slowest) { return clock > slowest ? clock - slowest : 0; }

}  // namespace shoal
