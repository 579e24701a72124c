// Element-wise activations and dropout. Backward passes add into dx.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace shoal {

void ReluForward(size_t n, const float* x, float* y);
void ReluBackward(size_t n, const float* y, const float* dy, float* dx);

// Inverted dropout: kept units are scaled by 1/(1-ratio) so evaluation is a copy.
void DropoutForward(size_t n, float ratio, const float* x, float* y, std::vector<float>* mask,
                    std::mt19937* rng);
void DropoutBackward(size_t n, const std::vector<float>& mask, const float* dy, float* dx);

}  // namespace shoal
