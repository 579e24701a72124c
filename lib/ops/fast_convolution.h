// A convolution faster than im2col + sgemm (ops/convolution.h) on the
// geometries it takes: Winograd's minimal filtering
// (ops/winograd_convolution.h) or oneDNN's direct kernels
// (ops/onednn_convolution.h). im2col + sgemm stays the fallback and the
// reference the tests compare against.
#pragma once

#include <memory>

#include "ops/convolution.h"

namespace shoal {

class FastConvolution {
 public:
  virtual ~FastConvolution() = default;
  // False when it has no kernel for this geometry and batch, or a GPU
  // computes (gpu_ops.h): the caller calls ConvolutionForward instead.
  virtual bool Forward(int batch, const float* x, const float* w, const float* b, float* y) = 0;
  // After a Forward that returned true, of the same batch on the same values
  // of x and w (which may be at other addresses now, as on a device memory
  // manager's pool): sets dw and db, adds into or sets dx when dx is not null.
  virtual void Backward(int batch, const float* x, const float* w, const float* dy, float* dx,
                        GradWrite dx_write, float* dw, float* db) = 0;
};

// The fastest this build and process have for g: Winograd where it takes g,
// oneDNN otherwise, and oneDNN alone under Precision::kBf16 (ops/blas.h);
// null where neither is enabled (im2col + sgemm computes).
std::unique_ptr<FastConvolution> NewFastConvolution(const ConvGeometry& g);

}  // namespace shoal
