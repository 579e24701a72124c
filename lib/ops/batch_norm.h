// Batch normalisation (Ioffe and Szegedy; torch.nn.BatchNorm1d/2d) over
// records [C, P]: channel c's C·P values of a batch are normalised by their
// mean and variance, then scaled and shifted by gamma[c] and beta[c]. A
// vector source is P = 1 (a channel per feature), an image P = H·W.
#pragma once

#include <functional>
#include <vector>

#include "ops/grad_write.h"

namespace shoal {

struct BatchNormGeometry {
  int channels = 0, plane = 0;  // per record: C and P
  float eps = 1e-5f;
};

// Synchronised batch norm (PyTorch's SyncBatchNorm): the statistics span
// the records of several workers, each holding its own. A GroupSums replaces
// this worker's sums (per channel, then the count of values) by the sums
// over all of them, the same on each; null, the batch is all there is.
using GroupSums = std::function<void(std::vector<double>* sums)>;

// What the forward pass writes: the normalised values ŷ = x̂·gamma + beta, or
// their ReLU (a ReLU layer fused with the batch norm before it; the host's
// kernels only). After kRelu the backward pass's dy is the ReLU's gradient: it is
// taken as zero where ŷ ≤ 0, ŷ computed again from x, gamma and beta. Either
// way every value comes out as the two layers compute it apart.
enum class BatchNormActivation { kNone, kRelu };

// Training: the batch's statistics, per channel. `mean` and `inv_std`
// (1/√(var + eps), the variance biased) are resized and kept for the
// backward pass; `var` (resized) is the variance unbiased, as PyTorch's
// running average takes it (the biased one where a channel has one value).
// A GPU (gpu_ops.h) keeps the three in its own memory, under their address,
// and takes no group and no activation.
void BatchNormTrainForward(const BatchNormGeometry& g, int batch, const float* x, const float* gamma,
                           const float* beta, float* y, std::vector<float>* mean, std::vector<float>* inv_std,
                           std::vector<float>* var, const GroupSums& group = nullptr,
                           BatchNormActivation activation = BatchNormActivation::kNone);
// Evaluation: the running statistics.
void BatchNormInferenceForward(const BatchNormGeometry& g, int batch, const float* x, const float* gamma,
                               const float* beta, const float* running_mean, const float* running_var,
                               float* y, BatchNormActivation activation = BatchNormActivation::kNone);
// From the training pass's x, mean and inv_std: dx (added or set; none
// where null), and dgamma and dbeta (set: this worker's records' share).
// With `group`, dx takes the group's sums of dy and dy·x̂, as the forward
// pass took the group's statistics. `beta` is read after kRelu only.
void BatchNormBackward(const BatchNormGeometry& g, int batch, const float* x, const float* dy,
                       const float* gamma, const std::vector<float>& mean, const std::vector<float>& inv_std,
                       float* dx, float* dgamma, float* dbeta, GradWrite write,
                       const GroupSums& group = nullptr,
                       BatchNormActivation activation = BatchNormActivation::kNone,
                       const float* beta = nullptr);

// The running averages' changes, as the servers take them (a gradient's
// place): momentum·(running − batch), for the mean and for the variance, from
// the training pass's `mean` and `var`.
void BatchNormRunningChanges(const BatchNormGeometry& g, float momentum, const float* running_mean,
                             const float* running_var, const std::vector<float>& mean,
                             const std::vector<float>& var, float* mean_change, float* var_change);

}  // namespace shoal
