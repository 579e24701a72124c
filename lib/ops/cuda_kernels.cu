#include <cfloat>

#include "ops/cuda_kernels.h"

namespace shoal::cuda {
namespace {

constexpr int kThreads = 256;
unsigned Blocks(size_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

__global__ void AddBiasRowsKernel(size_t n, int cols, const float* b, float* y) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] += b[i % cols];
}

__global__ void ReluKernel(size_t n, const float* x, float* y) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

__global__ void ReluGradKernel(size_t n, const float* y, const float* dy, float* dx, bool add) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float g = y[i] > 0.0f ? dy[i] : 0.0f;
  dx[i] = add ? dx[i] + g : g;
}

__global__ void SigmoidKernel(size_t n, const float* x, float* y) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = 1.0f / (1.0f + expf(-x[i]));
}

__global__ void SigmoidGradKernel(size_t n, const float* y, const float* dy, float* dx, bool add) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float g = dy[i] * y[i] * (1.0f - y[i]);
  dx[i] = add ? dx[i] + g : g;
}

__global__ void AddIntoKernel(size_t n, const float* x, float* y) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] += x[i];
}

// As the host's (ops/softmax_loss.cpp): the first arg-max wins, sums in double.
__global__ void SoftmaxCrossEntropyKernel(int batch, int classes, const float* logits, const int32_t* labels,
                                          float* prob, double* row_loss, int32_t* row_hit) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= batch) return;
  const float* z = logits + static_cast<size_t>(r) * classes;
  float* p = prob + static_cast<size_t>(r) * classes;
  int best = 0;
  for (int j = 1; j < classes; ++j)
    if (z[j] > z[best]) best = j;
  const float zmax = z[best];
  double sum = 0.0;
  for (int j = 0; j < classes; ++j) {
    p[j] = expf(z[j] - zmax);
    sum += p[j];
  }
  for (int j = 0; j < classes; ++j) p[j] = static_cast<float>(p[j] / sum);
  const int label = labels[r];
  const bool named = label >= 0 && label < classes;
  row_loss[r] = named ? -(z[label] - zmax - log(sum)) : 0.0;
  row_hit[r] = named && best == label;
}

__global__ void SoftmaxCrossEntropyGradKernel(int batch, int classes, const float* prob,
                                              const int32_t* labels, float* dlogits) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<size_t>(batch) * classes) return;
  const int r = static_cast<int>(i / classes), c = static_cast<int>(i % classes);
  const int label = labels[r];
  if (label < 0 || label >= classes) return;
  const float inv = 1.0f / batch;
  dlogits[i] += prob[i] * inv - (c == label ? inv : 0.0f);
}

}  // namespace

void AddBiasRows(int rows, int cols, const float* b, float* y) {
  const size_t n = static_cast<size_t>(rows) * cols;
  if (n) AddBiasRowsKernel<<<Blocks(n), kThreads>>>(n, cols, b, y);
}
void Relu(size_t n, const float* x, float* y) {
  if (n) ReluKernel<<<Blocks(n), kThreads>>>(n, x, y);
}
void ReluGrad(size_t n, const float* y, const float* dy, float* dx, bool add) {
  if (n) ReluGradKernel<<<Blocks(n), kThreads>>>(n, y, dy, dx, add);
}
void Sigmoid(size_t n, const float* x, float* y) {
  if (n) SigmoidKernel<<<Blocks(n), kThreads>>>(n, x, y);
}
void SigmoidGrad(size_t n, const float* y, const float* dy, float* dx, bool add) {
  if (n) SigmoidGradKernel<<<Blocks(n), kThreads>>>(n, y, dy, dx, add);
}
void AddInto(size_t n, const float* x, float* y) {
  if (n) AddIntoKernel<<<Blocks(n), kThreads>>>(n, x, y);
}
void SoftmaxCrossEntropy(int batch, int classes, const float* logits, const int32_t* labels, float* prob,
                         double* row_loss, int32_t* row_hit) {
  if (batch > 0)
    SoftmaxCrossEntropyKernel<<<Blocks(batch), kThreads>>>(batch, classes, logits, labels, prob, row_loss,
                                                           row_hit);
}
void SoftmaxCrossEntropyGrad(int batch, int classes, const float* prob, const int32_t* labels,
                             float* dlogits) {
  const size_t n = static_cast<size_t>(batch) * classes;
  if (n) SoftmaxCrossEntropyGradKernel<<<Blocks(n), kThreads>>>(batch, classes, prob, labels, dlogits);
}

}  // namespace shoal::cuda
