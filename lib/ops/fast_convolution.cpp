#include "ops/fast_convolution.h"

#include "ops/blas.h"
#include "ops/onednn_convolution.h"
#include "ops/winograd_convolution.h"

namespace shoal {

std::unique_ptr<FastConvolution> NewFastConvolution(const ConvGeometry& g) {
  // Winograd's transforms are float32: in bfloat16 oneDNN's kernels compute.
  if (ComputePrecision() != Precision::kBf16)
    if (auto winograd = NewWinogradConvolution(g)) return winograd;
  return NewOneDnnConvolution(g);
}

}  // namespace shoal
