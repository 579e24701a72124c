#include "ops/pooling.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/gpu_ops.h"
#include "ops/parallel.h"

namespace shoal {
namespace {

// The common 2×2, stride-2 window with its four loads unrolled; ties go to
// the first element in row-major order, as in the general loop. Selects, not
// branches: after a ReLU the winner is a coin toss the branch predictor loses.
void MaxPool2x2(const PoolGeometry& g, const float* __restrict in, float* __restrict out,
                int32_t* __restrict arg) {
  const int oh = g.out_height(), ow = g.out_width(), w = g.width;
  for (int i = 0; i < oh; ++i) {
    const int top = 2 * i * w;
    for (int j = 0; j < ow; ++j) {
      const int at[4] = {top + 2 * j, top + 2 * j + 1, top + w + 2 * j, top + w + 2 * j + 1};
      float best = in[at[0]];
      int where = at[0];
      for (int k = 1; k < 4; ++k) {
        const float v = in[at[k]];
        const bool more = v > best;
        where = more ? at[k] : where;
        best = more ? v : best;
      }
      out[i * ow + j] = best;
      arg[i * ow + j] = where;
    }
  }
}

// `v` where `keep`, else +0, without a branch (GCC keeps one for a float's
// `keep ? v : 0.0f`, and a window's winner is a coin toss).
inline float KeptOrZero(float v, bool keep) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  bits &= 0u - static_cast<uint32_t>(keep);
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// The 2×2, stride-2 windows' gradient, set rather than added into: each cell
// gets its window's output gradient where it won and +0 elsewhere, the
// values that clearing and then adding give (+0 + d). An odd last row or
// column is in no window and is cleared. With kRelu a window whose output
// the ReLU made +0 passes +0 (a ReLU's output is +0 or positive).
template <PoolInput kInput>
void MaxPool2x2GradSet(const PoolGeometry& g, const float* __restrict d, const int32_t* __restrict arg,
                       const float* __restrict top, float* __restrict out) {
  const int oh = g.out_height(), ow = g.out_width(), w = g.width;
  for (int i = 0; i < oh; ++i) {
    float* upper = out + 2 * i * w;
    float* lower = upper + w;
    for (int j = 0; j < ow; ++j) {
      const int o = i * ow + j;
      const float v = 0.0f + (kInput == PoolInput::kRelu ? KeptOrZero(d[o], top[o] != 0.0f) : d[o]);
      const int32_t won = arg[o] - 2 * i * w - 2 * j;
      upper[2 * j] = KeptOrZero(v, won == 0);
      upper[2 * j + 1] = KeptOrZero(v, won == 1);
      lower[2 * j] = KeptOrZero(v, won == w);
      lower[2 * j + 1] = KeptOrZero(v, won == w + 1);
    }
    if (w % 2 != 0) upper[w - 1] = lower[w - 1] = 0.0f;
  }
  if (g.height % 2 != 0) std::fill(out + (g.height - 1) * w, out + g.height * w, 0.0f);
}

// Whether the unrolled 2×2 path computes every window.
bool Plain2x2(const PoolGeometry& g) {
  return g.kind == PoolKind::kMax && g.kernel_h == 2 && g.kernel_w == 2 && g.stride == 2 && g.pad == 0 &&
         !g.Overhangs();
}

// Max pooling at stride 1, planes [begin, end), a run of them at a time:
// each run is copied into `padded`, every plane framed by its padding as
// -inf, one plane after another, so that every window lies inside the copy
// and each of its cells is the window's top-left cell plus a fixed offset.
// One pass per cell, in the window's row-major order, then runs over the
// whole copy at once (the compiler vectorises it), where one window's
// compares would wait on each other. A -inf cell never wins, so a window
// with no winner keeps its first cell inside the input: WindowWinner's
// results, bit for bit. The positions between the planes' windows are
// computed and dropped.
void MaxPoolStride1(const PoolGeometry& g, int begin, int end, const float* x, float* y, int32_t* argmax) {
  const int oh = g.out_height(), ow = g.out_width(), kh = g.kernel_h, kw = g.kernel_w;
  const int hp = g.height + 2 * g.pad, wp = g.width + 2 * g.pad, plane = hp * wp;
  constexpr int kRunFloats = 1 << 15;  // a run's copy, in floats: within a core's L2 cache
  const int run = std::max(1, kRunFloats / plane);
  thread_local std::vector<float> padded, best;
  thread_local std::vector<int32_t> cell;
  padded.assign(static_cast<size_t>(run) * plane, -INFINITY);
  best.resize(padded.size());
  cell.resize(padded.size());
  for (int first = begin; first < end; first += run) {
    const int planes = std::min(run, end - first);
    for (int q = 0; q < planes; ++q)
      for (int h = 0; h < g.height; ++h)
        std::copy_n(x + (static_cast<size_t>(first + q) * g.height + h) * g.width, g.width,
                    padded.data() + static_cast<size_t>(q) * plane + (h + g.pad) * wp + g.pad);
    // Windows whose top-left cell is at position 0 .. n - 1 of the copy.
    const int n = planes * plane - (kh - 1) * wp - (kw - 1);
    std::fill_n(best.data(), n, -INFINITY);
    std::fill_n(cell.data(), n, -1);  // an offset is never negative
    for (int di = 0; di < kh; ++di)
      for (int dj = 0; dj < kw; ++dj) {
        const float* __restrict in = padded.data() + di * wp + dj;
        float* __restrict top = best.data();
        int32_t* __restrict won = cell.data();
        const int32_t at = di * g.width + dj;  // from the window's top-left, in the input's rows
        // The index's select as a mask: GCC keeps a branch for `more ? a : b`.
        for (int k = 0; k < n; ++k) {
          const int32_t more = -static_cast<int32_t>(in[k] > top[k]);
          won[k] = (won[k] & ~more) | (at & more);
          top[k] = in[k] > top[k] ? in[k] : top[k];
        }
      }
    for (int q = 0; q < planes; ++q)
      for (int i = 0; i < oh; ++i)
        for (int j = 0; j < ow; ++j) {
          const int k = q * plane + i * wp + j;
          const size_t o = (static_cast<size_t>(first + q) * oh + i) * ow + j;
          y[o] = best[k];
          // No winner: the window's first cell inside the input.
          argmax[o] = cell[k] < 0 ? std::max(i - g.pad, 0) * g.width + std::max(j - g.pad, 0)
                                  : (i - g.pad) * g.width + j - g.pad + cell[k];
        }
  }
}

// Whether MaxPoolStride1 takes planes: max pooling at stride 1 where the
// positions it drops (the padding's) are few beside the windows.
bool Stride1Pays(const PoolGeometry& g) {
  const int padded = (g.height + 2 * g.pad) * (g.width + 2 * g.pad);
  return g.kind == PoolKind::kMax && g.stride == 1 && padded <= 3 * g.out_height() * g.out_width();
}

// Planes [begin, end) of the general case.
void PoolPlanes(const PoolGeometry& g, int begin, int end, const float* x, float* y, int32_t* argmax) {
  const int oh = g.out_height(), ow = g.out_width();
  if (Plain2x2(g)) {
    for (int p = begin; p < end; ++p)
      MaxPool2x2(g, x + static_cast<size_t>(p) * g.height * g.width, y + static_cast<size_t>(p) * oh * ow,
                 argmax + static_cast<size_t>(p) * oh * ow);
    return;
  }
  if (Stride1Pays(g)) return MaxPoolStride1(g, begin, end, x, y, argmax);
  for (int p = begin; p < end; ++p) {
    const float* in = x + static_cast<size_t>(p) * g.height * g.width;
    float* out = y + static_cast<size_t>(p) * oh * ow;
    int32_t* arg = g.kind == PoolKind::kMax ? argmax + static_cast<size_t>(p) * oh * ow : nullptr;
    for (int i = 0; i < oh; ++i) {
      const PoolSpan rows = WindowSpan(i, g.stride, g.pad, g.kernel_h, g.height);
      for (int j = 0; j < ow; ++j) {
        const PoolSpan cols = WindowSpan(j, g.stride, g.pad, g.kernel_w, g.width);
        if (g.kind == PoolKind::kAvg)
          out[i * ow + j] = WindowAverage(in, g.width, rows, cols);
        else
          arg[i * ow + j] = WindowWinner(in, g.width, rows, cols, &out[i * ow + j]);
      }
    }
  }
}

// The ReLU of planes [begin, end) of y, as ReluForward writes it.
void ReluPlanes(const PoolGeometry& g, int begin, int end, float* y) {
  const size_t plane = static_cast<size_t>(g.out_height()) * g.out_width();
  for (size_t i = begin * plane; i < end * plane; ++i) y[i] = y[i] > 0.0f ? y[i] : 0.0f;
}

// Adds a plane's input gradient into `out`, from its output gradient `d`.
void AvgPoolPlaneBackward(const PoolGeometry& g, const float* d, float* out) {
  const int oh = g.out_height(), ow = g.out_width();
  for (int i = 0; i < oh; ++i) {
    const PoolSpan rows = WindowSpan(i, g.stride, g.pad, g.kernel_h, g.height);
    for (int j = 0; j < ow; ++j) {
      const PoolSpan cols = WindowSpan(j, g.stride, g.pad, g.kernel_w, g.width);
      const float share = d[i * ow + j] / static_cast<float>(rows.padded * cols.padded);
      for (int h = rows.begin; h < rows.end; ++h)
        for (int w = cols.begin; w < cols.end; ++w) out[h * g.width + w] += share;
    }
  }
}

int MaxTasks(const PoolGeometry& g, int batch) {
  return static_cast<size_t>(batch) * g.channels * g.height * g.width < kParallelMin ? 1 : 1 << 30;
}

}  // namespace

// Planes are split over the compute threads; each writes only its own planes.
void PoolForward(const PoolGeometry& g, int batch, const float* x, float* y, std::vector<int32_t>* argmax,
                 PoolInput input) {
  if (GpuOps* gpu = CurrentGpuOps()) return gpu->PoolForward(g, batch, x, y);
  const int planes = batch * g.channels;
  argmax->resize(g.kind == PoolKind::kMax ? static_cast<size_t>(planes) * g.out_height() * g.out_width() : 0);
  int32_t* arg = argmax->data();
  ParallelFor(
      planes,
      [&](int, int begin, int end) {
        PoolPlanes(g, begin, end, x, y, arg);
        if (input == PoolInput::kRelu) ReluPlanes(g, begin, end, y);
      },
      MaxTasks(g, batch));
}

void PoolBackward(const PoolGeometry& g, int batch, const float* x, const float* y, const float* dy,
                  const std::vector<int32_t>& argmax, float* dx, GradWrite write, PoolInput input) {
  if (GpuOps* gpu = CurrentGpuOps()) return gpu->PoolBackward(g, batch, x, y, dy, dx, write);
  const int plane_out = g.out_height() * g.out_width();
  const int plane_in = g.height * g.width;
  const int planes = batch * g.channels;
  auto planes_range = [&](int, int begin, int end) {
    for (int p = begin; p < end; ++p) {
      const float* d = dy + static_cast<size_t>(p) * plane_out;
      float* out = dx + static_cast<size_t>(p) * plane_in;
      const int32_t* arg =
          g.kind == PoolKind::kMax ? argmax.data() + static_cast<size_t>(p) * plane_out : nullptr;
      const float* top = input == PoolInput::kRelu ? y + static_cast<size_t>(p) * plane_out : nullptr;
      if (write == GradWrite::kSet && Plain2x2(g)) {
        if (top)
          MaxPool2x2GradSet<PoolInput::kRelu>(g, d, arg, top, out);
        else
          MaxPool2x2GradSet<PoolInput::kAsIs>(g, d, arg, top, out);
        continue;
      }
      if (write == GradWrite::kSet) std::fill(out, out + plane_in, 0.0f);
      if (g.kind == PoolKind::kAvg) {
        AvgPoolPlaneBackward(g, d, out);
        continue;
      }
      if (top == nullptr) {
        for (int i = 0; i < plane_out; ++i) out[arg[i]] += d[i];
        continue;
      }
      // A window whose output the ReLU made +0 adds +0: to a winner that is
      // not positive, which the ReLU's gradient leaves at +0 after a kSet.
      for (int i = 0; i < plane_out; ++i) out[arg[i]] += KeptOrZero(d[i], top[i] != 0.0f);
    }
  };
  ParallelFor(planes, planes_range, MaxTasks(g, batch));
}

}  // namespace shoal
