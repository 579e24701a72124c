// Convolution on oneDNN (libdnnl), where the build found it: primitives
// created once per batch size and reused, computing in the blocked layouts
// oneDNN's direct kernels prefer (nChw16c on AVX-512), with the tensors
// reordered from and to shoal's NCHW at the layer's edges. im2col + sgemm
// (ops/convolution.h) stays the fallback and the reference the tests compare
// against.
#pragma once

#include <memory>

#include "ops/convolution.h"

namespace shoal {

class OneDnnConvolution {
 public:
  virtual ~OneDnnConvolution() = default;
  // False when oneDNN has no primitive for this geometry and batch, or a
  // GPU computes (gpu_ops.h): the caller calls ConvolutionForward instead.
  virtual bool Forward(int batch, const float* x, const float* w, const float* b, float* y) = 0;
  // After Forward of the same batch on the same values of x and w (it reuses
  // their reordered copies; they may be elsewhere now, as on a device memory
  // manager's pool): sets dw and db, adds into or sets dx when dx is not null.
  virtual void Backward(int batch, const float* x, const float* w, const float* dy, float* dx,
                        GradWrite dx_write, float* dw, float* db) = 0;
};

// Null unless oneDNN is enabled (ops/onednn.h).
std::unique_ptr<OneDnnConvolution> NewOneDnnConvolution(const ConvGeometry& g);

}  // namespace shoal
