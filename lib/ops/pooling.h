// Max pooling over square windows; remembers the winner of each window so
// the gradient flows back to it alone.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/grad_write.h"

namespace shoal {

struct PoolGeometry {
  int channels, height, width;  // input, per record
  int kernel, stride;
  int out_height() const { return (height - kernel) / stride + 1; }
  int out_width() const { return (width - kernel) / stride + 1; }
};

void MaxPoolForward(const PoolGeometry& g, int batch, const float* x, float* y, std::vector<int32_t>* argmax);
// Each window's winner gets its output's gradient, added into dx or, with
// kSet, into a dx cleared plane by plane here (while the plane is in cache).
// The host finds the winners in `argmax`; a GPU (gpu_ops.h), which keeps
// none, from the forward pass's x and y.
void MaxPoolBackward(const PoolGeometry& g, int batch, const float* x, const float* y, const float* dy,
                     const std::vector<int32_t>& argmax, float* dx, GradWrite write);

}  // namespace shoal
