// Max and average pooling over rectangular windows, zero-padded, with the
// output size rounded down or (Caffe's and ceil_mode's) up. Max pooling
// remembers each window's winner so the gradient flows back to it alone;
// average pooling divides by the window's size within the padded input, as
// torch.nn.AvgPool2d with count_include_pad does.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/host_device.h"
#include "ops/grad_write.h"

namespace shoal {

enum class PoolKind { kMax, kAvg };

struct PoolGeometry {
  int channels = 0, height = 0, width = 0;  // input, per record
  int kernel_h = 0, kernel_w = 0, stride = 1, pad = 0;
  PoolKind kind = PoolKind::kMax;
  // Rounds the output size up: a last window may start in the input or its
  // leading pad and run past the trailing one (it covers what it can).
  bool ceil_mode = false;

  int out_height() const { return OutSize(height, kernel_h); }
  int out_width() const { return OutSize(width, kernel_w); }
  // Whether some window runs past the padded input (ceil_mode's extra one).
  bool Overhangs() const {
    return (out_height() - 1) * stride + kernel_h > height + 2 * pad ||
           (out_width() - 1) * stride + kernel_w > width + 2 * pad;
  }

 private:
  int OutSize(int in, int kernel) const {
    const int span = in + 2 * pad - kernel;
    int out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
    if (ceil_mode && (out - 1) * stride >= in + pad) --out;  // the last window starts in the input
    return out;
  }
};

// A window's rows or columns [begin, end) within the input, and the count an
// average divides by (the window within the padded input); output index
// `out` along an axis of `in` values. The host's and a GPU's kernels alike.
struct PoolSpan {
  int begin, end, padded;
};
SHOAL_HOST_DEVICE inline PoolSpan WindowSpan(int out, int stride, int pad, int kernel, int in) {
  const int start = out * stride - pad;
  const int stop = start + kernel < in + pad ? start + kernel : in + pad;
  return {start > 0 ? start : 0, stop < in ? stop : in, stop - start};
}

// The first of a window's largest values in row-major order in the plane
// `in` (a row `width` long): its index, and the value in `best`. Selects, not
// branches: after a ReLU the winner is a coin toss the branch predictor loses.
SHOAL_HOST_DEVICE inline int32_t WindowWinner(const float* in, int width, PoolSpan rows, PoolSpan cols,
                                              float* best) {
  float top = -INFINITY;
  int32_t where = rows.begin * width + cols.begin;
  for (int h = rows.begin; h < rows.end; ++h)
    for (int w = cols.begin; w < cols.end; ++w) {
      const int32_t at = h * width + w;
      const bool more = in[at] > top;
      where = more ? at : where;
      top = more ? in[at] : top;
    }
  *best = top;
  return where;
}

// A window's average: the sum of its values in the input over its size within the padded input.
SHOAL_HOST_DEVICE inline float WindowAverage(const float* in, int width, PoolSpan rows, PoolSpan cols) {
  float sum = 0.0f;
  for (int h = rows.begin; h < rows.end; ++h)
    for (int w = cols.begin; w < cols.end; ++w) sum += in[h * width + w];
  return sum / static_cast<float>(rows.padded * cols.padded);
}

// What a max pooling's windows read: x itself, or the ReLU of x (a ReLU
// layer before the pooling, done in its passes). A ReLU commutes with the
// maximum, so kRelu pools x and takes the ReLU of each window's winner; the
// winners whose ReLU is zero pass no gradient back, as the ReLU would stop it.
// With GradWrite::kSet that is bit for bit the two layers' passes (NaNs
// aside). On host memory only, and for max pooling only.
enum class PoolInput { kAsIs, kRelu };

// `argmax` (max pooling's winners) is resized and filled by the host; a GPU
// (gpu_ops.h) keeps none and finds the winners from the forward pass's x and y.
void PoolForward(const PoolGeometry& g, int batch, const float* x, float* y, std::vector<int32_t>* argmax,
                 PoolInput input = PoolInput::kAsIs);
// The output gradient goes to each window's winner (max) or spreads over its
// window (avg), added into dx or, with kSet, into a dx cleared plane by plane
// here (while the plane is in cache). `input` is the forward pass's.
void PoolBackward(const PoolGeometry& g, int batch, const float* x, const float* y, const float* dy,
                  const std::vector<int32_t>& argmax, float* dx, GradWrite write,
                  PoolInput input = PoolInput::kAsIs);

}  // namespace shoal
