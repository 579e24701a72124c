// Batch normalisation (Ioffe and Szegedy; torch.nn.BatchNorm1d/2d) over
// records [C, P]: channel c's C·P values of a batch are normalised by their
// mean and variance, then scaled and shifted by gamma[c] and beta[c]. A
// vector source is P = 1 (a channel per feature), an image P = H·W.
#pragma once

#include <vector>

#include "ops/grad_write.h"

namespace shoal {

struct BatchNormGeometry {
  int channels = 0, plane = 0;  // per record: C and P
  float eps = 1e-5f;
};

// Training: the batch's statistics, per channel. `mean` and `inv_std`
// (1/√(var + eps), the variance biased) are resized and kept for the
// backward pass; `var` (resized) is the variance unbiased, as PyTorch's
// running average takes it (the biased one where a channel has one value).
void BatchNormTrainForward(const BatchNormGeometry& g, int batch, const float* x, const float* gamma,
                           const float* beta, float* y, std::vector<float>* mean, std::vector<float>* inv_std,
                           std::vector<float>* var);
// Evaluation: the running statistics.
void BatchNormInferenceForward(const BatchNormGeometry& g, int batch, const float* x, const float* gamma,
                               const float* beta, const float* running_mean, const float* running_var,
                               float* y);
// From the training pass's x, mean and inv_std: dx (added or set; none
// where null), and dgamma and dbeta (set).
void BatchNormBackward(const BatchNormGeometry& g, int batch, const float* x, const float* dy,
                       const float* gamma, const std::vector<float>& mean, const std::vector<float>& inv_std,
                       float* dx, float* dgamma, float* dbeta, GradWrite write);

}  // namespace shoal
