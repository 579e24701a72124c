#include "ps/updater.h"

#include <cmath>
#include <cstring>

#include "core/log.h"
#include "ps/lr_schedule.h"

namespace shoal {
namespace {

// In double: Adam divides it by its bias correction before rounding to float, as PyTorch does.
double ScheduledRate(const UpdaterConfig& c, uint64_t step) {
  return c.learning_rate * ScheduleFactor(c.schedule, step);
}

// Iteration i reads element i of every buffer before it writes element i,
// and touches no other: buffers may be the same (in place), never offset, so
// no dependence is carried between iterations. Without the pragma the
// compiler checks every pair at run time, and past its limit of checks (Adam
// has six buffers) it does not vectorise at all.
#define SHOAL_NO_CARRIED _Pragma("GCC ivdep")

// The loops below follow torch.optim's single-tensor code operation by
// operation, in float32, with its scalars (1 − beta, bias corrections)
// computed in double as Python does, so that results agree to rounding.

// Where a rule reads gradient i: as given, or (a server's sum) scaled and
// cleared in the same pass, so that the update reads its memory once. The
// scaled value is the float a separate `g *= scale` pass would have left.
struct Given {
  const float* g;
  float operator()(size_t i) const { return g[i]; }
};
struct Consumed {
  float* g;
  float scale;
  float operator()(size_t i) const {
    const float v = g[i] * scale;
    g[i] = 0.0f;
    return v;
  }
};
// The last contributor's value i, from its message's bytes.
inline float LastAt(const unsigned char* last, size_t i) {
  float v;
  std::memcpy(&v, last + 4 * i, 4);  // an unaligned load, which the compiler vectorises
  return v;
}
// The sum and the last contributor's values, added as AddValues would have.
struct ConsumedPlusLast {
  float* g;
  const unsigned char* last;
  float scale;
  float operator()(size_t i) const {
    const float v = (g[i] + LastAt(last, i)) * scale;
    g[i] = 0.0f;
    return v;
  }
};
// The last contributor alone, into a sum of zeros: 0 + x, which is x but for
// −0 (→ +0) and which the compiler keeps, so that the bits are the sum's.
struct OnlyLast {
  const unsigned char* last;
  float scale;
  float operator()(size_t i) const { return (0.0f + LastAt(last, i)) * scale; }
};

// Where a rule writes value i: the values' buffer, or that and a message's
// bytes too (fp32, unaligned), which may be the very bytes `last` reads
// gradient i from: each is read before it is written.
struct Into {
  float* out;
  void operator()(size_t i, float v) const { out[i] = v; }
};
struct IntoBoth {
  float* out;
  unsigned char* also;
  void operator()(size_t i, float v) const {
    out[i] = v;
    std::memcpy(also + 4 * i, &v, 4);
  }
};

template <typename Grad, typename Out>
void Sgd(float lr, float wd, size_t n, Grad grad, const float* w, Out out) {
  SHOAL_NO_CARRIED
  for (size_t i = 0; i < n; ++i) out(i, w[i] - lr * (grad(i) + wd * w[i]));
}

template <typename Grad, typename Out>
void Momentum(float lr, float wd, float mu, bool nesterov, size_t n, Grad grad, const float* w, Out out,
              float* v) {
  SHOAL_NO_CARRIED
  for (size_t i = 0; i < n; ++i) {
    const float g = grad(i) + wd * w[i];
    v[i] = v[i] * mu + g;
    out(i, w[i] - lr * (nesterov ? g + mu * v[i] : v[i]));
  }
}

template <typename Grad, typename Out>
void Adagrad(float lr, float wd, float eps, size_t n, Grad grad, const float* w, Out out, float* sum_sq) {
  SHOAL_NO_CARRIED
  for (size_t i = 0; i < n; ++i) {
    const float g = grad(i) + wd * w[i];
    sum_sq[i] += g * g;
    out(i, w[i] - lr * g / (std::sqrt(sum_sq[i]) + eps));
  }
}

template <typename Grad, typename Out>
void Rmsprop(float lr, float wd, double alpha, float eps, size_t n, Grad grad, const float* w, Out out,
             float* avg) {
  const float a = static_cast<float>(alpha), keep = static_cast<float>(1.0 - alpha);
  SHOAL_NO_CARRIED
  for (size_t i = 0; i < n; ++i) {
    const float g = grad(i) + wd * w[i];
    avg[i] = avg[i] * a + keep * g * g;
    out(i, w[i] - lr * g / (std::sqrt(avg[i]) + eps));
  }
}

template <typename Grad, typename Out>
void Adam(const UpdaterConfig& c, double lr, uint64_t step, size_t n, Grad grad, const float* w, Out out,
          float* m, float* u) {
  const double k = static_cast<double>(step) + 1.0;  // Adam's step count: this update is its k-th
  const float b1 = static_cast<float>(c.beta1), b2 = static_cast<float>(c.beta2);
  const float one_minus_b1 = static_cast<float>(1.0 - c.beta1),
              one_minus_b2 = static_cast<float>(1.0 - c.beta2);
  const float step_size = static_cast<float>(lr / (1.0 - std::pow(c.beta1, k)));
  const float correction2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(c.beta2, k)));
  const float eps = static_cast<float>(c.epsilon), wd = static_cast<float>(c.weight_decay);
  SHOAL_NO_CARRIED
  for (size_t i = 0; i < n; ++i) {
    const float g = grad(i) + wd * w[i];
    m[i] = m[i] * b1 + one_minus_b1 * g;
    u[i] = u[i] * b2 + one_minus_b2 * g * g;
    out(i, w[i] - step_size * m[i] / (std::sqrt(u[i]) / correction2_sqrt + eps));
  }
}

}  // namespace

UpdaterConfig UpdaterOfParam(const UpdaterConfig& job, float lr_mult, ParamRole role) {
  UpdaterConfig c = job;
  if (role == ParamRole::kTrained) {
    c.learning_rate *= lr_mult;
    return c;
  }
  // w −= change: the rule is sgd at rate 1 and keeps no state of its own
  // (the job's rule's buffers stay, zero, for one checkpoint layout).
  c.rule = UpdateRule::kSgd;
  c.learning_rate = lr_mult == 0.0f ? 0.0 : 1.0;
  c.schedule = LrSchedule{};
  c.weight_decay = 0.0;
  c.momentum = 0.0;
  return c;
}

UpdaterConfig UpdaterFromTrain(const TrainConfig& train, int workers) {
  UpdaterConfig c;
  c.rule = train.updater;
  c.learning_rate = train.learning_rate * (train.scale_lr_with_workers ? workers : 1);
  c.schedule = train.lr_schedule;
  c.momentum = train.momentum;
  c.weight_decay = train.weight_decay;
  c.beta1 = train.beta1;
  c.beta2 = train.beta2;
  c.rmsprop_alpha = train.rmsprop_alpha;
  c.epsilon = train.epsilon;
  return c;
}

UpdaterState NewUpdaterState(const UpdaterConfig& config, size_t n) {
  return UpdaterState(UpdaterStateNames(config.rule).size(), std::vector<float>(n, 0.0f));
}

float LearningRateAt(const UpdaterConfig& c, uint64_t step) {
  return static_cast<float>(ScheduledRate(c, step));
}

template <typename Grad, typename Out>
void Update(const UpdaterConfig& c, uint64_t step, size_t n, Grad grad, const float* w, Out out,
            UpdaterState* state) {
  const float lr = LearningRateAt(c, step), wd = static_cast<float>(c.weight_decay);
  const float eps = static_cast<float>(c.epsilon), mu = static_cast<float>(c.momentum);
  std::vector<std::vector<float>>& s = *state;
  switch (c.rule) {
    case UpdateRule::kSgd:
      return Sgd(lr, wd, n, grad, w, out);
    case UpdateRule::kMomentum:
      return Momentum(lr, wd, mu, false, n, grad, w, out, s[0].data());
    case UpdateRule::kNesterov:
      return Momentum(lr, wd, mu, true, n, grad, w, out, s[0].data());
    case UpdateRule::kAdagrad:
      return Adagrad(lr, wd, eps, n, grad, w, out, s[0].data());
    case UpdateRule::kRmsprop:
      return Rmsprop(lr, wd, c.rmsprop_alpha, eps, n, grad, w, out, s[0].data());
    case UpdateRule::kAdam:
      return Adam(c, ScheduledRate(c, step), step, n, grad, w, out, s[0].data(), s[1].data());
  }
}

void ApplyUpdate(const UpdaterConfig& c, uint64_t step, size_t n, const float* grad, float* value,
                 UpdaterState* state) {
  Update(c, step, n, Given{grad}, value, Into{value}, state);
}

template <typename Grad>
void UpdateInto(const UpdaterConfig& c, uint64_t step, size_t n, Grad grad, const float* value,
                float* updated, unsigned char* also_into, UpdaterState* state) {
  if (also_into) return Update(c, step, n, grad, value, IntoBoth{updated, also_into}, state);
  Update(c, step, n, grad, value, Into{updated}, state);
}

void ApplySumUpdate(const UpdaterConfig& c, uint64_t step, size_t n, const GradientSum& grad,
                    const float* value, float* updated, UpdaterState* state, unsigned char* also_into) {
  if (!grad.last)
    return UpdateInto(c, step, n, Consumed{grad.sum, grad.scale}, value, updated, also_into, state);
  if (grad.sum_is_zero)
    return UpdateInto(c, step, n, OnlyLast{grad.last, grad.scale}, value, updated, also_into, state);
  UpdateInto(c, step, n, ConsumedPlusLast{grad.sum, grad.last, grad.scale}, value, updated, also_into, state);
}

}  // namespace shoal
