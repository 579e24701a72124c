// Server-side updaters: the rule that turns a step's gradient into new
// values. Each is exactly torch.optim's, so that runs compare with PyTorch's;
// weight decay is added to the gradient first, as PyTorch does
// (g = grad + weight_decay·w), and lr is the scheduled rate of this update:
//   sgd       w −= lr·g
//   momentum  v = momentum·v + g;  w −= lr·v                     (SGD, momentum)
//   nesterov  v = momentum·v + g;  w −= lr·(g + momentum·v)      (SGD, nesterov=True)
//   adagrad   s += g²;  w −= lr·g / (√s + eps)                   (Adagrad, lr_decay 0)
//   rmsprop   a = alpha·a + (1 − alpha)·g²;  w −= lr·g / (√a + eps)   (RMSprop, not centered)
//   adam      m = beta1·m + (1 − beta1)·g;  u = beta2·u + (1 − beta2)·g²;
//             w −= lr/(1 − beta1^k) · m / (√u / √(1 − beta2^k) + eps), where
//             k = t + 1 for the update that makes version t + 1     (Adam, amsgrad off)
// Every state buffer starts at 0, as PyTorch's do (its momentum buffer
// starts as the first g, which is the same thing).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "config/job.h"
#include "layers/layer.h"

namespace shoal {

struct UpdaterConfig {
  UpdateRule rule = UpdateRule::kMomentum;  // with momentum 0, plain SGD
  double learning_rate = 0.05;  // at update 0, before the schedule (after scaling for the workers)
  LrSchedule schedule;
  double momentum = 0.0;
  double weight_decay = 0.0;
  double beta1 = 0.9, beta2 = 0.999;
  double rmsprop_alpha = 0.99;
  double epsilon = 1e-8;
};

// The job's updater; with train.scale_lr_with_workers, learning_rate × `workers`
// (the gradients one update averages).
UpdaterConfig UpdaterFromTrain(const TrainConfig& train, int workers);

// The updater of one parameter: the job's at its learning rate × lr_mult, or
// for a running average (ParamRole) plain subtraction of its change.
UpdaterConfig UpdaterOfParam(const UpdaterConfig& job, float lr_mult, ParamRole role);

// One buffer per state name, in that order, each as long as the values.
using UpdaterState = std::vector<std::vector<float>>;
// Zeros for `n` values: the state before the first update.
UpdaterState NewUpdaterState(const UpdaterConfig& config, size_t n);

// The learning rate for the update that makes version `step` + 1.
float LearningRateAt(const UpdaterConfig& config, uint64_t step);

// The update that makes version `step` + 1: changes `value` and `state`
// (NewUpdaterState's shape for these n values) by `grad`.
void ApplyUpdate(const UpdaterConfig& config, uint64_t step, size_t n, const float* grad, float* value,
                 UpdaterState* state);
// A server's gradient for one update: the sum of its workers' so far, plus
// the last contributor's still in its message (fp32 bytes, as they came,
// unaligned), added to the sum in that order, all × `scale`. A sum known to
// be zero is neither read nor cleared.
struct GradientSum {
  float* sum;
  bool sum_is_zero = false;
  const unsigned char* last = nullptr;  // none: the sum is the whole gradient
  float scale = 1.0f;
};
// The same update by a server's gradient, leaving its sum zero for the next
// step and the new values in `updated` (which may be `value`, or keep
// `value` as it was): one pass over memory where adding the last
// contributor, scaling, copying, updating and clearing would take five;
// bit for bit the same. With `also_into`, the new values are written there
// too, as fp32 bytes (unaligned; it may be `grad.last`, each gradient read
// before its value is written): the reply that carries them, encoded in the
// same pass.
void ApplySumUpdate(const UpdaterConfig& config, uint64_t step, size_t n, const GradientSum& grad,
                    const float* value, float* updated, UpdaterState* state,
                    unsigned char* also_into = nullptr);

}  // namespace shoal
