// Softmax cross-entropy, averaged over the batch (as PyTorch's cross_entropy).
#pragma once

#include <cstdint>

namespace shoal {

// Returns the mean loss; writes probabilities to `prob` and counts correct
// arg-max predictions into `*correct`. A row whose label is not a class
// (below 0 or from `classes` on) adds nothing to the loss, the hits or the gradient.
float SoftmaxCrossEntropyForward(int batch, int classes, const float* logits, const int32_t* labels,
                                 float* prob, int* correct);
// Adds d loss / d logits = (prob - onehot) / batch to dlogits.
void SoftmaxCrossEntropyBackward(int batch, int classes, const float* prob, const int32_t* labels,
                                 float* dlogits);

}  // namespace shoal
