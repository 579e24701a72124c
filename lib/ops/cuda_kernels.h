// The element-wise kernels of the CUDA ops (cuda_kernels.cu), each launched
// on the legacy default stream, where cuBLAS and cuDNN compute too.
#pragma once

#include <cstddef>
#include <cstdint>

namespace shoal::cuda {

// y[r, c] += b[c] for `rows` rows of `cols`.
void AddBiasRows(int rows, int cols, const float* b, float* y);
// The activations from y, as ops/elementwise.h; `add`: dx += …, else dx = ….
void Relu(size_t n, const float* x, float* y);
void ReluGrad(size_t n, const float* y, const float* dy, float* dx, bool add);
void Sigmoid(size_t n, const float* x, float* y);
void SigmoidGrad(size_t n, const float* y, const float* dy, float* dx, bool add);
void AddInto(size_t n, const float* x, float* y);  // y += x
// Softmax cross-entropy, one thread a row: prob, and per row its loss
// (0 where the label names no class) and whether its arg-max is the label.
void SoftmaxCrossEntropy(int batch, int classes, const float* logits, const int32_t* labels, float* prob,
                         double* row_loss, int32_t* row_hit);
// dlogits += (prob − onehot) / batch on rows whose label names a class.
void SoftmaxCrossEntropyGrad(int batch, int classes, const float* prob, const int32_t* labels,
                             float* dlogits);

}  // namespace shoal::cuda
