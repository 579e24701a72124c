// Tests for lib/train/lanes: how an overlapping worker cuts its layers into requests.
#include "plan/lanes.h"

#include <doctest/doctest.h>

#include <vector>

namespace shoal {
namespace {

std::vector<std::vector<size_t>> Ranges(const std::vector<LaneRange>& lanes) {
  std::vector<std::vector<size_t>> out;
  for (const auto& l : lanes) out.push_back({l.begin, l.end});
  return out;
}

// The Fashion-MNIST models' layers with parameters, floats per layer in the net's order.
const std::vector<size_t> kCnn = {832, 51264, 803072, 2570};  // conv1, conv2, fc1, fc2
const std::vector<size_t> kMlp = {200960, 32896, 1290};       // fc1, fc2, fc3

TEST_CASE("lanes gather layers from the top down until they hold enough; the bottom ones make the last") {
  // DDP's first bucket, 1 MiB of fp32: the CNN's fc layers leave while the
  // convolutions' backward runs; the MLP's layers leave together.
  CHECK(Ranges(GroupLanes(kCnn, 262144)) == std::vector<std::vector<size_t>>{{2, 4}, {0, 2}});
  CHECK(Ranges(GroupLanes(kMlp, 262144)) == std::vector<std::vector<size_t>>{{0, 3}});
  CHECK(Ranges(GroupLanes(kCnn, 50000)) == std::vector<std::vector<size_t>>{{2, 4}, {1, 2}, {0, 1}});
  CHECK(Ranges(GroupLanes(kCnn, 2570)) == std::vector<std::vector<size_t>>{{3, 4}, {2, 3}, {1, 2}, {0, 1}});
}

TEST_CASE("lanes: 0 gives one per layer, and nothing gives none") {
  CHECK(Ranges(GroupLanes(kMlp, 0)) == std::vector<std::vector<size_t>>{{2, 3}, {1, 2}, {0, 1}});
  CHECK(GroupLanes({}, 0).empty());
  CHECK(GroupLanes({}, 100).empty());
  CHECK(Ranges(GroupLanes({5}, 100)) == std::vector<std::vector<size_t>>{{0, 1}});
}

}  // namespace
}  // namespace shoal
