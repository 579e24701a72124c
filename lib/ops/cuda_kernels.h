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
// Dropout as the host's (elementwise.h): y = x·mask, or y += x·mask with
// `add`, the mask scale or 0 by UnitDraw(key, i) against ratio.
void Dropout(size_t n, float ratio, float scale, uint64_t key, const float* x, float* y, bool add);
// y[r·y_stride + i] += x[r·x_stride + i] for i < cols, r < rows.
void AddRows(int rows, size_t cols, const float* x, size_t x_stride, float* y, size_t y_stride);
// change[c] = momentum·(running[c] − batch[c]), for c < n (batch_norm.h).
void RunningChange(int n, float momentum, const float* running, const float* batch, float* change);

// Max or average pooling over `planes` planes as the host's (pooling.cpp),
// every window, also one that runs past the padded input (which cuDNN has
// no form for): the first of a window's largest values wins; an average
// divides by the window's size within the padded input.
struct PoolShape {
  int planes, height, width, out_height, out_width, kernel_h, kernel_w, stride, pad;
  bool average;
};
void Pool(const PoolShape& s, const float* x, float* y);
// dx from dy, an input's sum gathered from the windows that hold it, in the
// host's order; `add`: into dx, else set.
void PoolGrad(const PoolShape& s, const float* x, const float* dy, float* dx, bool add);

// Softmax cross-entropy, one thread a row: prob, and per row its loss
// (0 where the label names no class) and whether its arg-max is the label.
void SoftmaxCrossEntropy(int batch, int classes, const float* logits, const int32_t* labels, float* prob,
                         double* row_loss, int32_t* row_hit);
// dlogits += (prob − onehot) / batch on rows whose label names a class.
void SoftmaxCrossEntropyGrad(int batch, int classes, const float* prob, const int32_t* labels,
                             float* dlogits);

}  // namespace shoal::cuda
