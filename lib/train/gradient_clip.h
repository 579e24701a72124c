// Gradient clipping by global norm (train.clip_norm; PyTorch's
// clip_grad_norm_): a recurrent net's exploding gradients scaled back.
#pragma once

#include <vector>

#include "layers/layer.h"

namespace shoal {

// Scales every parameter's gradient by max_norm / norm when their joint L2
// norm is above max_norm; returns that norm (before scaling). Running
// averages (ParamRole) carry no gradient and are left out.
double ClipGradientNorm(const std::vector<Param*>& params, double max_norm);

}  // namespace shoal
