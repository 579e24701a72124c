// Fully connected: y[B,N] = x[B,K] · W[N,K]ᵀ + b[N] (W laid out as PyTorch's Linear).
#pragma once

#include "ops/grad_write.h"

namespace shoal {

// Below this many multiply-adds (batch · in · out) a product runs on the
// calling thread alone: split over threads, a smaller one loses more to
// waking them and to the smaller products than it gains.
inline constexpr double kFullyConnectedParallelMacs = 1 << 24;

void FullyConnectedForward(int batch, int in, int out, const float* x, const float* w, const float* b,
                           float* y);
// Sets dw and db; adds into or sets dx (when not null).
void FullyConnectedBackward(int batch, int in, int out, const float* x, const float* w, const float* dy,
                            float* dx, float* dw, float* db, GradWrite dx_write);

}  // namespace shoal
