// How a worker that overlaps communication with computation (train.overlap)
// cuts its slices on one server into requests, "lanes" (PyTorch DDP's
// buckets): whole layers, gathered from the top of the net down, backprop's
// order, until a lane holds at least `min_floats` values; the layers left at
// the bottom make the last lane. A lane leaves once backprop has finished its
// lowest layer, and is collected just before that layer's next forward pass.
// Each request costs messages and wake-ups on both sides: a layer too small
// to be worth one rides with the next. Here, below lib/train, because the
// planner's step time (lib/plan/cost_model.h, StepSeconds) cuts the same lanes.
#pragma once

#include <cstddef>
#include <vector>

namespace shoal {

struct LaneRange {
  size_t begin, end;  // layers [begin, end) in the net's order
};

// `floats`: per layer with slices on the server, in the net's order. The
// lanes come top first; min_floats 0 gives one lane per layer.
std::vector<LaneRange> GroupLanes(const std::vector<size_t>& floats, size_t min_floats);

}  // namespace shoal
