// Convolution on oneDNN (libdnnl), where the build found it: primitives
// created once per batch size and reused, computing in the blocked layouts
// oneDNN's direct kernels prefer (nChw16c on AVX-512), with the tensors
// reordered from and to shoal's NCHW at the layer's edges. im2col + sgemm
// (ops/convolution.h) stays the fallback and the reference the tests compare
// against.
#pragma once

#include <memory>

#include "ops/fast_convolution.h"

namespace shoal {

// Null unless oneDNN is enabled (ops/onednn.h). Its Forward returns false
// where oneDNN has no primitive for the geometry and batch; its Backward
// reuses the reordered copies of x and w that Forward made.
std::unique_ptr<FastConvolution> NewOneDnnConvolution(const ConvGeometry& g);

}  // namespace shoal
