// Element-wise activations and dropout. Backward passes add into dx or set it (GradWrite).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/hash.h"
#include "ops/grad_write.h"

namespace shoal {

void ReluForward(size_t n, const float* x, float* y);
void ReluBackward(size_t n, const float* y, const float* dy, float* dx, GradWrite write);

// y = 1 / (1 + e^-x) and y = tanh x over a dense run of n floats, on the
// calling thread alone (y may be x): on oneDNN's vector kernels where it
// computes here, else from libm's expf. The two differ in the last bits.
void LogisticRun(size_t n, const float* x, float* y);
void TanhRun(size_t n, const float* x, float* y);

// y = 1 / (1 + e^-x) over the compute threads (LogisticRun); backward from
// y: dx += dy·y·(1 − y).
void SigmoidForward(size_t n, const float* x, float* y);
void SigmoidBackward(size_t n, const float* y, const float* dy, float* dx, GradWrite write);

// y = x, and dx = dy or dx += dy: a layer that only reshapes (flatten).
void IdentityForward(size_t n, const float* x, float* y);
void IdentityBackward(size_t n, const float* dy, float* dx, GradWrite write);
// y = xs[0] + xs[1] + ..., added in that order, then with relu max(y, 0), the
// bits of AddInto's sums and ReluForward after them: the add layer's sum in
// one pass over its sources, and the ReLU after it where the layer computes it.
void SumForward(size_t n, const std::vector<const float*>& xs, float* y, bool relu);
// y += x, on the current device: a sum of features (the add layer).
inline void AddInto(size_t n, const float* x, float* y) { IdentityBackward(n, x, y, GradWrite::kAdd); }

// Rows of `cols` floats, `rows` of them, from x (one every x_stride floats)
// into y (one every y_stride), set or added: a concatenation's parts.
void CopyRows(int rows, size_t cols, const float* x, size_t x_stride, float* y, size_t y_stride,
              GradWrite write);

// Inverted dropout: unit i is kept, and scaled by 1/(1 − ratio) so that
// evaluation is a copy, where UnitDraw(key, i) (core/hash.h) is at least
// `ratio`. The mask is a function of the key: both passes, a GPU's and a
// restarted worker's draw it alike, and nobody keeps it.
void DropoutForward(size_t n, float ratio, uint64_t key, const float* x, float* y);
// Unit i's factor under `key`: `scale` (1/(1 − ratio)) or 0; the host's and a GPU's.
SHOAL_HOST_DEVICE inline float DropoutFactor(uint64_t key, uint64_t i, float ratio, float scale) {
  return UnitDraw(key, i) >= ratio ? scale : 0.0f;
}
void DropoutBackward(size_t n, float ratio, uint64_t key, const float* dy, float* dx, GradWrite write);

}  // namespace shoal
