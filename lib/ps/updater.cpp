#include "ps/updater.h"

#include <cmath>

namespace shoal {

UpdaterConfig UpdaterFromTrain(const TrainConfig& train) {
  UpdaterConfig c;
  c.learning_rate = static_cast<float>(train.learning_rate);
  c.schedule = train.lr_schedule;
  c.momentum = train.updater == "sgd" ? 0.0f : static_cast<float>(train.momentum);
  c.weight_decay = static_cast<float>(train.weight_decay);
  return c;
}

float LearningRateAt(const UpdaterConfig& c, uint64_t step) {
  if (c.schedule.kind != "step") return c.learning_rate;
  return c.learning_rate * static_cast<float>(std::pow(c.schedule.gamma, step / c.schedule.every));
}

void ApplyUpdate(const UpdaterConfig& c, uint64_t step, size_t n, const float* grad, float* value,
                 float* velocity) {
  const float lr = LearningRateAt(c, step), mu = c.momentum, wd = c.weight_decay;
  if (mu == 0.0f) {
    for (size_t i = 0; i < n; ++i) value[i] -= lr * (grad[i] + wd * value[i]);
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    float g = grad[i] + wd * value[i];
    velocity[i] = mu * velocity[i] + g;
    value[i] -= lr * velocity[i];
  }
}

}  // namespace shoal
