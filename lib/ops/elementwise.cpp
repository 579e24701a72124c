#include "ops/elementwise.h"

namespace shoal {

void ReluForward(size_t n, const float* __restrict x, float* __restrict y) {
  for (size_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

// A select rather than a branch, with no aliasing, so the loop vectorizes.
void ReluBackward(size_t n, const float* __restrict y, const float* __restrict dy,
                  float* __restrict dx) {
  for (size_t i = 0; i < n; ++i) dx[i] += y[i] > 0.0f ? dy[i] : 0.0f;
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
