// Convolution by Winograd's minimal filtering (Lavin & Gray, "Fast
// Algorithms for Convolutional Neural Networks", 2016), for stride 1 and
// kernels of 2 to 5: F(m×m, r×r) on α×α tiles, m = α + 1 − r outputs a side,
// α = 6 for kernels of 2 and 3 and 8 for 4 and 5 (for a 3×3 kernel 36
// products give 4×4 outputs, against 144 directly; for 5×5, 64 give 4×4,
// against 400). All three passes use the same tiles: the forward pass and the
// data gradient (a correlation with the flipped kernel) are F(m, r), the
// weight gradient is F(r, m) with the output gradient's m×m tile as the
// filter. The products at each of the α² points are one sgemm over channels
// (forward, data gradient) or over tiles (weight gradient).
//
// Differs from im2col + sgemm by rounding only, a few times more than oneDNN
// does (the transforms scale by factors from 1/90 to 16); tests/unit/ops
// holds it to that.
#pragma once

#include <memory>

#include "ops/fast_convolution.h"

namespace shoal {

// False when SHOAL_WINOGRAD is 0 or off in the environment (read once).
bool WinogradEnabled();

// Whether Winograd computes a convolution of geometry g here:
// SHOAL_WINOGRAD not 0 or off in the environment (read once), stride 1,
// kernel 2 to 5, pad below the kernel, at least 16 channels in and out
// for kernels of 4 and 5, 32 for 2 and 3, and room in a group of products
// (its budget of floats, shared by the channels in and out) for 16 tiles
// or more. Elsewhere the transforms cost more than the products save
// (build/convolution_speed measures it).
bool WinogradTakes(const ConvGeometry& g);

// Null unless WinogradTakes(g). Its Forward returns false only where a GPU
// computes.
std::unique_ptr<FastConvolution> NewWinogradConvolution(const ConvGeometry& g);

}  // namespace shoal
