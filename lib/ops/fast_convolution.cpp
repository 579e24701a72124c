#include "ops/fast_convolution.h"

#include "ops/onednn_convolution.h"
#include "ops/winograd_convolution.h"

namespace shoal {

std::unique_ptr<FastConvolution> NewFastConvolution(const ConvGeometry& g) {
  if (auto winograd = NewWinogradConvolution(g)) return winograd;
  return NewOneDnnConvolution(g);
}

}  // namespace shoal
