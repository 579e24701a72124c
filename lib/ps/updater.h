// Server-side updaters. Same rule as PyTorch's SGD so that runs compare:
//   g += weight_decay · w;  v = momentum · v + g;  w -= lr · v
// (plain SGD is momentum 0).
#pragma once

#include <cstddef>
#include <cstdint>

#include "config/job.h"

namespace shoal {

struct UpdaterConfig {
  float learning_rate = 0.05f;  // at step 0
  LrSchedule schedule;
  float momentum = 0.0f;
  float weight_decay = 0.0f;
};

UpdaterConfig UpdaterFromTrain(const TrainConfig& train);

// The learning rate for the update that makes version `step` + 1.
float LearningRateAt(const UpdaterConfig& config, uint64_t step);

// `velocity` is the updater's state for these values (ignored when momentum is 0).
void ApplyUpdate(const UpdaterConfig& config, uint64_t step, size_t n, const float* grad, float* value,
                 float* velocity);

}  // namespace shoal
