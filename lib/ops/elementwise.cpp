#include "ops/elementwise.h"

#include <algorithm>
#include <cmath>

#include "ops/gpu_ops.h"
#include "ops/onednn_eltwise.h"
#include "ops/parallel.h"

namespace shoal {
namespace {

// Runs fn(begin, end) over [0, n) split into the compute threads' contiguous
// ranges, each a multiple of 16 floats (a cache line) except the last.
template <typename Fn>
void ForRanges(size_t n, const Fn& fn) {
  if (n < kParallelMin) {
    fn(size_t{0}, n);
    return;
  }
  const int lines = static_cast<int>((n + 15) / 16);
  ParallelFor(lines, [&](int, int begin, int end) {
    fn(static_cast<size_t>(begin) * 16, std::min(n, static_cast<size_t>(end) * 16));
  });
}

void ReluForwardRange(size_t begin, size_t end, const float* __restrict x, float* __restrict y) {
  for (size_t i = begin; i < end; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

}  // namespace

void LogisticRun(size_t n, const float* x, float* y) {
  if (OneDnnSquash(Squash::kLogistic, n, x, y)) return;
  for (size_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + std::exp(-x[i]));
}

void TanhRun(size_t n, const float* x, float* y) {
  if (OneDnnSquash(Squash::kTanh, n, x, y)) return;
  // Through the logistic function's one expf: cheaper than libm's tanhf.
  for (size_t i = 0; i < n; ++i) y[i] = 2.0f * (1.0f / (1.0f + std::exp(-2.0f * x[i]))) - 1.0f;
}

void SigmoidForward(size_t n, const float* x, float* y) {
  if (GpuOps* gpu = CurrentGpuOps()) return gpu->SigmoidForward(n, x, y);
  ForRanges(n, [&](size_t begin, size_t end) { LogisticRun(end - begin, x + begin, y + begin); });
}

void SigmoidBackward(size_t n, const float* y, const float* dy, float* dx, GradWrite write) {
  if (GpuOps* gpu = CurrentGpuOps()) return gpu->SigmoidBackward(n, y, dy, dx, write);
  ForRanges(n, [&](size_t begin, size_t end) {
    WriteGrad(begin, end, write, dx, [&](size_t i) { return dy[i] * y[i] * (1.0f - y[i]); });
  });
}

void ReluForward(size_t n, const float* x, float* y) {
  if (GpuOps* gpu = CurrentGpuOps()) return gpu->ReluForward(n, x, y);
  ForRanges(n, [&](size_t begin, size_t end) { ReluForwardRange(begin, end, x, y); });
}

void ReluBackward(size_t n, const float* y, const float* dy, float* dx, GradWrite write) {
  if (GpuOps* gpu = CurrentGpuOps()) return gpu->ReluBackward(n, y, dy, dx, write);
  // dy[i] is loaded whatever y[i] is. A load under the condition keeps the
  // compiler from turning the branch into a select: the loop stays scalar,
  // with a mispredicted branch for every other value.
  ForRanges(n, [&](size_t begin, size_t end) {
    WriteGrad(begin, end, write, dx, [&](size_t i) {
      const float d = dy[i];
      return y[i] > 0.0f ? d : 0.0f;
    });
  });
}

void IdentityForward(size_t n, const float* x, float* y) {
  if (GpuOps* gpu = CurrentGpuOps()) return gpu->IdentityForward(n, x, y);
  std::copy(x, x + n, y);
}

void IdentityBackward(size_t n, const float* dy, float* dx, GradWrite write) {
  if (GpuOps* gpu = CurrentGpuOps()) return gpu->IdentityBackward(n, dy, dx, write);
  WriteGrad(0, n, write, dx, [&](size_t i) { return dy[i]; });
}

void SumForward(size_t n, const std::vector<const float*>& xs, float* y, bool relu) {
  if (CurrentGpuOps()) {
    IdentityForward(n, xs[0], y);
    for (size_t k = 1; k < xs.size(); ++k) AddInto(n, xs[k], y);
    if (relu) ReluForward(n, y, y);
    return;
  }
  ForRanges(n, [&](size_t begin, size_t end) {
    const float* a = xs[0];
    if (xs.size() == 2) {  // a residual join: one pass
      const float* b = xs[1];
      if (relu)
        for (size_t i = begin; i < end; ++i) {
          const float sum = a[i] + b[i];
          y[i] = sum > 0.0f ? sum : 0.0f;
        }
      else
        for (size_t i = begin; i < end; ++i) y[i] = a[i] + b[i];
      return;
    }
    std::copy(a + begin, a + end, y + begin);
    for (size_t k = 1; k < xs.size(); ++k)
      for (size_t i = begin; i < end; ++i) y[i] += xs[k][i];
    if (relu)
      for (size_t i = begin; i < end; ++i) y[i] = y[i] > 0.0f ? y[i] : 0.0f;
  });
}

void DropoutForward(size_t n, float ratio, uint64_t key, const float* x, float* y) {
  if (GpuOps* gpu = CurrentGpuOps()) return gpu->DropoutForward(n, ratio, key, x, y);
  const float scale = 1.0f / (1.0f - ratio);
  ForRanges(n, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) y[i] = x[i] * DropoutFactor(key, i, ratio, scale);
  });
}

void DropoutBackward(size_t n, float ratio, uint64_t key, const float* dy, float* dx, GradWrite write) {
  if (GpuOps* gpu = CurrentGpuOps()) return gpu->DropoutBackward(n, ratio, key, dy, dx, write);
  const float scale = 1.0f / (1.0f - ratio);
  ForRanges(n, [&](size_t begin, size_t end) {
    WriteGrad(begin, end, write, dx, [&](size_t i) { return dy[i] * DropoutFactor(key, i, ratio, scale); });
  });
}

void CopyRows(int rows, size_t cols, const float* x, size_t x_stride, float* y, size_t y_stride,
              GradWrite write) {
  if (GpuOps* gpu = CurrentGpuOps()) return gpu->CopyRows(rows, cols, x, x_stride, y, y_stride, write);
  for (int r = 0; r < rows; ++r)
    WriteGrad(0, cols, write, y + r * y_stride, [&](size_t i) { return x[r * x_stride + i]; });
}

}  // namespace shoal
