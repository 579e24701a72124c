#include "plan/lanes.h"

namespace shoal {

std::vector<LaneRange> GroupLanes(const std::vector<size_t>& floats, size_t min_floats) {
  std::vector<LaneRange> lanes;
  size_t end = floats.size(), held = 0;
  for (size_t i = floats.size(); i-- > 0;) {
    held += floats[i];
    if (held < min_floats && i > 0) continue;
    lanes.push_back({i, end});
    end = i;
    held = 0;
  }
  return lanes;
}

}  // namespace shoal
