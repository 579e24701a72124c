#include "ops/fully_connected.h"

#include <algorithm>

#include "ops/blas.h"
#include "ops/gpu_ops.h"
#include "ops/parallel.h"

namespace shoal {
namespace {

int MaxTasks(int batch, int in, int out) {
  return static_cast<double>(batch) * in * out < kFullyConnectedParallelMacs ? 1 : 1 << 30;
}

}  // namespace

// With several compute threads: rows of the batch for y and dx, rows of W for
// dw; each element is computed by exactly one thread, in the same order. In
// bfloat16 each thread rounds a copy of each of its operands (ops/blas.h), so
// y and dx split W's rows and columns instead: its copies then cover W once.
void FullyConnectedForward(int batch, int in, int out, const float* x, const float* w, const float* b,
                           float* y) {
  if (GpuOps* gpu = CurrentGpuOps()) return gpu->FullyConnectedForward(batch, in, out, x, w, b, y);
  if (ComputePrecision() == Precision::kBf16)
    return ParallelFor(
        out,
        [&](int, int begin, int end) {
          for (int i = 0; i < batch; ++i)
            std::copy(b + begin, b + end, y + static_cast<size_t>(i) * out + begin);
          Sgemm(false, true, batch, end - begin, in, 1.0f, x, in, w + static_cast<size_t>(begin) * in, in,
                1.0f, y + begin, out);
        },
        MaxTasks(batch, in, out));
  ParallelFor(
      batch,
      [&](int, int begin, int end) {
        for (int i = begin; i < end; ++i)
          for (int j = 0; j < out; ++j) y[i * out + j] = b[j];
        Sgemm(false, true, end - begin, out, in, 1.0f, x + static_cast<size_t>(begin) * in, w, 1.0f,
              y + static_cast<size_t>(begin) * out);
      },
      MaxTasks(batch, in, out));
}

void FullyConnectedBackward(int batch, int in, int out, const float* x, const float* w, const float* dy,
                            float* dx, float* dw, float* db, GradWrite dx_write) {
  if (GpuOps* gpu = CurrentGpuOps())
    return gpu->FullyConnectedBackward(batch, in, out, x, w, dy, dx, dw, db, dx_write);
  const int max_tasks = MaxTasks(batch, in, out);
  ParallelFor(
      out,
      [&](int, int begin, int end) {
        Sgemm(true, false, end - begin, in, batch, 1.0f, dy + begin, out, x, in, 0.0f,
              dw + static_cast<size_t>(begin) * in, in);
      },
      max_tasks);
  std::fill(db, db + out, 0.0f);
  for (int i = 0; i < batch; ++i)
    for (int j = 0; j < out; ++j) db[j] += dy[i * out + j];
  if (!dx) return;
  const float beta = dx_write == GradWrite::kAdd ? 1.0f : 0.0f;
  if (ComputePrecision() == Precision::kBf16)
    return ParallelFor(
        in,
        [&](int, int begin, int end) {
          Sgemm(false, false, batch, end - begin, out, 1.0f, dy, out, w + begin, in, beta, dx + begin, in);
        },
        max_tasks);
  ParallelFor(
      batch,
      [&](int, int begin, int end) {
        Sgemm(false, false, end - begin, in, out, 1.0f, dy + static_cast<size_t>(begin) * out, w, beta,
              dx + static_cast<size_t>(begin) * in);
      },
      max_tasks);
}

}  // namespace shoal
