// 2-D convolution by im2col + sgemm, with stride and zero padding.
// x[B,C,H,W], w[F,C,K,K] (PyTorch's Conv2d layout), b[F], y[B,F,Ho,Wo].
#pragma once

#include <vector>

#include "ops/grad_write.h"

namespace shoal {

struct ConvGeometry {
  int channels, height, width;  // input, per record
  int filters, kernel, stride, pad;
  int out_height() const { return (height + 2 * pad - kernel) / stride + 1; }
  int out_width() const { return (width + 2 * pad - kernel) / stride + 1; }
  int col_rows() const { return channels * kernel * kernel; }
  int col_cols() const { return out_height() * out_width(); }
};

// `scratch` is working memory, grown as needed and reused across calls.
void ConvolutionForward(const ConvGeometry& g, int batch, const float* x, const float* w, const float* b,
                        float* y, std::vector<float>* scratch);
// Sets dw and db; adds into or sets dx (when not null).
void ConvolutionBackward(const ConvGeometry& g, int batch, const float* x, const float* w, const float* dy,
                         float* dx, float* dw, float* db, GradWrite dx_write, std::vector<float>* scratch);

}  // namespace shoal
