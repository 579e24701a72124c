#include "ops/elementwise.h"

namespace shoal {

void ReluForward(size_t n, const float* x, float* y) {
  for (size_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void ReluBackward(size_t n, const float* y, const float* dy, float* dx) {
  for (size_t i = 0; i < n; ++i) if (y[i] > 0.0f) dx[i] += dy[i];
}

void DropoutForward(size_t n, float ratio, const float* x, float* y, std::vector<float>* mask,
                    std::mt19937* rng) {
  mask->resize(n);
  const float scale = 1.0f / (1.0f - ratio);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  for (size_t i = 0; i < n; ++i) {
    (*mask)[i] = uniform(*rng) >= ratio ? scale : 0.0f;
    y[i] = x[i] * (*mask)[i];
  }
}

void DropoutBackward(size_t n, const std::vector<float>& mask, const float* dy, float* dx) {
  for (size_t i = 0; i < n; ++i) dx[i] += dy[i] * mask[i];
}

}  // namespace shoal
