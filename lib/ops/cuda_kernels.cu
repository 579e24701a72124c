#include <cfloat>
#include <cmath>

#include "ops/cuda_kernels.h"
#include "ops/elementwise.h"
#include "ops/pooling.h"

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

__global__ void DropoutKernel(size_t n, float ratio, float scale, uint64_t key, const float* x, float* y,
                              bool add) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  // Rounded as a product, as the host's is: never fused into the add.
  const float v = __fmul_rn(x[i], DropoutFactor(key, i, ratio, scale));
  y[i] = add ? y[i] + v : v;
}

__global__ void AddRowsKernel(size_t n, size_t cols, const float* x, size_t x_stride, float* y,
                              size_t y_stride) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const size_t r = i / cols, c = i % cols;
  y[r * y_stride + c] += x[r * x_stride + c];
}

__global__ void RunningChangeKernel(int n, float momentum, const float* running, const float* batch,
                                    float* change) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c < n) change[c] = momentum * (running[c] - batch[c]);
}

// One thread an output value, by the host's window functions (pooling.h).
__global__ void PoolKernel(PoolShape s, const float* x, float* y) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  const size_t plane_out = static_cast<size_t>(s.out_height) * s.out_width;
  if (i >= plane_out * s.planes) return;
  const int col = static_cast<int>(i % s.out_width), row = static_cast<int>(i / s.out_width % s.out_height);
  const float* in = x + i / plane_out * s.height * s.width;
  const PoolSpan rows = WindowSpan(row, s.stride, s.pad, s.kernel_h, s.height);
  const PoolSpan cols = WindowSpan(col, s.stride, s.pad, s.kernel_w, s.width);
  if (s.average)
    y[i] = WindowAverage(in, s.width, rows, cols);
  else
    WindowWinner(in, s.width, rows, cols, &y[i]);
}

// The windows along one axis that hold input index `at`: [first, last].
__device__ void Holding(int at, int pad, int kernel, int stride, int outs, int* first, int* last) {
  const int span = at + pad - kernel;  // a window starting after this one holds `at`
  *first = span < 0 ? 0 : span / stride + 1;
  *last = min(outs - 1, (at + pad) / stride);
}

// One thread an input value: the windows that hold it in the host's order,
// row by row, so that the sums round as the host's do.
__global__ void PoolGradKernel(PoolShape s, const float* x, const float* dy, float* dx, bool add) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  const size_t plane_in = static_cast<size_t>(s.height) * s.width;
  if (i >= plane_in * s.planes) return;
  const int w = static_cast<int>(i % s.width), h = static_cast<int>(i / s.width % s.height);
  const size_t plane = i / plane_in;
  const float* in = x + plane * plane_in;
  const float* d = dy + plane * s.out_height * s.out_width;
  int row_first, row_last, col_first, col_last;
  Holding(h, s.pad, s.kernel_h, s.stride, s.out_height, &row_first, &row_last);
  Holding(w, s.pad, s.kernel_w, s.stride, s.out_width, &col_first, &col_last);
  float sum = add ? dx[i] : 0.0f;
  for (int r = row_first; r <= row_last; ++r) {
    const PoolSpan rows = WindowSpan(r, s.stride, s.pad, s.kernel_h, s.height);
    for (int c = col_first; c <= col_last; ++c) {
      const PoolSpan cols = WindowSpan(c, s.stride, s.pad, s.kernel_w, s.width);
      const float g = d[r * s.out_width + c];
      float best;
      if (s.average)
        sum += g / static_cast<float>(rows.padded * cols.padded);
      else if (WindowWinner(in, s.width, rows, cols, &best) == h * s.width + w)
        sum += g;
    }
  }
  dx[i] = sum;
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
void Dropout(size_t n, float ratio, float scale, uint64_t key, const float* x, float* y, bool add) {
  if (n) DropoutKernel<<<Blocks(n), kThreads>>>(n, ratio, scale, key, x, y, add);
}
void AddRows(int rows, size_t cols, const float* x, size_t x_stride, float* y, size_t y_stride) {
  const size_t n = static_cast<size_t>(rows) * cols;
  if (n) AddRowsKernel<<<Blocks(n), kThreads>>>(n, cols, x, x_stride, y, y_stride);
}
void RunningChange(int n, float momentum, const float* running, const float* batch, float* change) {
  if (n > 0) RunningChangeKernel<<<Blocks(n), kThreads>>>(n, momentum, running, batch, change);
}
void Pool(const PoolShape& s, const float* x, float* y) {
  const size_t n = static_cast<size_t>(s.planes) * s.out_height * s.out_width;
  if (n) PoolKernel<<<Blocks(n), kThreads>>>(s, x, y);
}
void PoolGrad(const PoolShape& s, const float* x, const float* dy, float* dx, bool add) {
  const size_t n = static_cast<size_t>(s.planes) * s.height * s.width;
  if (n) PoolGradKernel<<<Blocks(n), kThreads>>>(s, x, dy, dx, add);
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
