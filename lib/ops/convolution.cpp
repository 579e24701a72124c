#include "ops/convolution.h"

#include <algorithm>

#include "ops/blas.h"
#include "ops/gpu_ops.h"
#include "ops/parallel.h"

namespace shoal {
namespace {

// Images are convolved in groups: the group's im2col columns sit side by side
// ([rows, group·cols]), so one sgemm covers the group. Per-image products are
// too thin (N = Ho·Wo) for sgemm to run near peak; a whole batch's columns
// would not fit in cache. This keeps the columns near kColumnBudget floats;
// each thread has its own columns.
constexpr size_t kColumnBudget = 1 << 18;

// A power of two: a record's arithmetic (which sgemm column it is) must not
// depend on where a batch is split. Workers × batch b then compute exactly
// what one worker × the whole batch does whenever b is a multiple of the
// group; otherwise rounding-level differences make max pooling choose other
// near-tied maxima, and the runs drift apart.
int GroupSize(const ConvGeometry& g, int batch) {
  size_t per_image = static_cast<size_t>(g.col_rows()) * g.col_cols();
  size_t group = 1;
  while (group * 2 * per_image <= kColumnBudget) group *= 2;
  return static_cast<int>(std::min<size_t>(group, batch));
}

// The output columns j whose input column j·stride − pad + kj falls inside
// [0, width): computed once per kernel offset so the inner loops have no
// bounds checks (and copy contiguously when the stride is 1).
struct ValidRange {
  int lo, hi;
};
ValidRange ValidColumns(const ConvGeometry& g, int kj) {
  const int ow = g.out_width();
  int lo = 0;
  while (lo < ow && lo * g.stride - g.pad + kj < 0) ++lo;
  int hi = ow;
  while (hi > lo && (hi - 1) * g.stride - g.pad + kj >= g.width) --hi;
  return {lo, hi};
}

// "Same" geometry (stride 1, output as wide as the input, e.g. 5×5 with pad
// 2): an im2col row is then the input plane shifted by one offset, so it is
// copied as one long run with a mask for the padding columns. Copying per
// output row moves only ow floats at a time, too short to run at memory speed.
bool ShiftGeometry(const ConvGeometry& g) { return g.stride == 1 && g.out_width() == g.width; }

// Kernel offset (ki, kj)'s run: im2col positions [first, last) read plane
// position + offset; outside the run the row is padding.
struct Run {
  int first, last, offset;
};

// Computed once per call, not per image.
struct ShiftPlan {
  std::vector<Run> runs;    // [kernel·kernel]
  std::vector<float> keep;  // [kernel][Ho·Wo]: 1 where the column is inside the plane
};

ShiftPlan MakeShiftPlan(const ConvGeometry& g) {
  ShiftPlan plan;
  const int w = g.width, n = g.col_cols();
  plan.keep.assign(static_cast<size_t>(g.kernel) * n, 0.0f);
  for (int kj = 0; kj < g.kernel; ++kj) {
    const ValidRange v = ValidColumns(g, kj);
    for (int k = 0; k < n; ++k) plan.keep[kj * n + k] = k % w >= v.lo && k % w < v.hi ? 1.0f : 0.0f;
  }
  for (int ki = 0; ki < g.kernel; ++ki)
    for (int kj = 0; kj < g.kernel; ++kj) {
      const ValidRange v = ValidColumns(g, kj);
      const int ilo = std::max(0, g.pad - ki), ihi = std::min(g.out_height(), g.height + g.pad - ki);
      if (ilo >= ihi || v.lo >= v.hi)
        plan.runs.push_back({0, 0, 0});
      else
        plan.runs.push_back({ilo * w + v.lo, (ihi - 1) * w + v.hi, (ki - g.pad) * w + kj - g.pad});
    }
  return plan;
}

// The run loops, as functions so that __restrict (which GCC honours on
// parameters) lets them vectorize; a select, not a multiply by keep, so that
// an inf or NaN at a padding position stays out.
void CopyMasked(const float* __restrict src, const float* __restrict keep, int n, float* __restrict dst) {
  for (int k = 0; k < n; ++k) {
    const float v = src[k];
    dst[k] = keep[k] != 0.0f ? v : 0.0f;
  }
}
void AddMasked(const float* __restrict src, const float* __restrict keep, int n, float* __restrict dst) {
  for (int k = 0; k < n; ++k) {
    const float v = src[k];
    dst[k] += keep[k] != 0.0f ? v : 0.0f;
  }
}

// Writes image x's columns into col, whose rows are `stride` floats apart.
// `plan` is null unless the geometry is the shift geometry.
void Im2Col(const ConvGeometry& g, const ShiftPlan* plan, const float* x, float* col, size_t stride) {
  const int oh = g.out_height(), ow = g.out_width();
  const int n = oh * ow;
  for (int c = 0; c < g.channels; ++c)
    for (int ki = 0; ki < g.kernel; ++ki)
      for (int kj = 0; kj < g.kernel; ++kj) {
        float* __restrict row = col + ((c * g.kernel + ki) * g.kernel + kj) * stride;
        const float* __restrict plane = x + c * g.height * g.width;
        if (plan) {
          const Run r = plan->runs[ki * g.kernel + kj];
          const float* __restrict keep = plan->keep.data() + kj * n;
          std::fill(row, row + r.first, 0.0f);
          // plane + offset is in bounds anywhere in the run.
          CopyMasked(plane + r.first + r.offset, keep + r.first, r.last - r.first, row + r.first);
          std::fill(row + r.last, row + n, 0.0f);
          continue;
        }
        const ValidRange v = ValidColumns(g, kj);
        for (int i = 0; i < oh; ++i) {
          const int h = i * g.stride - g.pad + ki;
          float* out = row + i * ow;
          if (h < 0 || h >= g.height) {
            std::fill(out, out + ow, 0.0f);
            continue;
          }
          const float* in = plane + h * g.width - g.pad + kj;
          std::fill(out, out + v.lo, 0.0f);
          for (int j = v.lo; j < v.hi; ++j) out[j] = in[j * g.stride];
          std::fill(out + v.hi, out + ow, 0.0f);
        }
      }
}

// Adds columns back into image x (the adjoint of Im2Col).
void Col2ImAdd(const ConvGeometry& g, const ShiftPlan* plan, const float* col, size_t stride, float* x) {
  const int oh = g.out_height(), ow = g.out_width();
  const int n = oh * ow;
  for (int c = 0; c < g.channels; ++c)
    for (int ki = 0; ki < g.kernel; ++ki)
      for (int kj = 0; kj < g.kernel; ++kj) {
        const float* __restrict row = col + ((c * g.kernel + ki) * g.kernel + kj) * stride;
        float* __restrict plane = x + c * g.height * g.width;
        if (plan) {
          const Run r = plan->runs[ki * g.kernel + kj];
          const float* __restrict keep = plan->keep.data() + kj * n;
          AddMasked(row + r.first, keep + r.first, r.last - r.first, plane + r.first + r.offset);
          continue;
        }
        const ValidRange v = ValidColumns(g, kj);
        for (int i = 0; i < oh; ++i) {
          const int h = i * g.stride - g.pad + ki;
          if (h < 0 || h >= g.height) continue;
          float* out = plane + h * g.width - g.pad + kj;
          const float* in = row + i * ow;
          for (int j = v.lo; j < v.hi; ++j) out[j * g.stride] += in[j];
        }
      }
}

// Copies n floats and returns their sum; eight partial sums let the loop
// vectorize (a single float accumulator cannot be reordered).
float CopyAndSum(const float* __restrict src, int n, float* __restrict dst) {
  float part[8] = {};
  int p = 0;
  for (; p + 8 <= n; p += 8)
    for (int k = 0; k < 8; ++k) {
      dst[p + k] = src[p + k];
      part[k] += src[p + k];
    }
  float s = 0.0f;
  for (; p < n; ++p) {
    dst[p] = src[p];
    s += src[p];
  }
  for (float v : part) s += v;
  return s;
}

// Images [n_begin, n_end) with one thread's working memory (col_rows·width
// plus filters·width floats, width = GroupSize·cols).
void ForwardImages(const ConvGeometry& g, const ShiftPlan* plan, int n_begin, int n_end, const float* x,
                   const float* w, const float* b, float* y, float* work) {
  const int rows = g.col_rows(), cols = g.col_cols(), group = GroupSize(g, n_end - n_begin);
  const size_t in_size = static_cast<size_t>(g.channels) * g.height * g.width;
  const size_t out_size = static_cast<size_t>(g.filters) * cols;
  float* col = work;
  float* out = col + static_cast<size_t>(rows) * group * cols;
  for (int n0 = n_begin; n0 < n_end; n0 += group) {
    const int n = std::min(group, n_end - n0);
    const size_t stride = static_cast<size_t>(n) * cols;
    for (int i = 0; i < n; ++i) Im2Col(g, plan, x + (n0 + i) * in_size, col + i * cols, stride);
    Sgemm(false, false, g.filters, static_cast<int>(stride), rows, 1.0f, w, col, 0.0f, out);
    // out is [filters, n·cols]; y is [n, filters, cols].
    for (int i = 0; i < n; ++i)
      for (int f = 0; f < g.filters; ++f) {
        const float* src = out + f * stride + i * cols;
        float* dst = y + (n0 + i) * out_size + f * cols;
        for (int p = 0; p < cols; ++p) dst[p] = src[p] + b[f];
      }
  }
}

// Sets dw and db from images [n_begin, n_end); adds into or sets their dx.
void BackwardImages(const ConvGeometry& g, const ShiftPlan* plan, int n_begin, int n_end, const float* x,
                    const float* w, const float* dy, float* dx, GradWrite dx_write, float* dw, float* db,
                    float* work) {
  const int rows = g.col_rows(), cols = g.col_cols(), group = GroupSize(g, n_end - n_begin);
  const size_t in_size = static_cast<size_t>(g.channels) * g.height * g.width;
  const size_t out_size = static_cast<size_t>(g.filters) * cols;
  float* col = work;
  float* grad = col + static_cast<size_t>(rows) * group * cols;
  std::fill(db, db + g.filters, 0.0f);
  for (int n0 = n_begin; n0 < n_end; n0 += group) {
    const int n = std::min(group, n_end - n0);
    const size_t stride = static_cast<size_t>(n) * cols;
    // Gather dy into [filters, n·cols], summing the bias gradient on the way.
    for (int i = 0; i < n; ++i)
      for (int f = 0; f < g.filters; ++f)
        db[f] += CopyAndSum(dy + (n0 + i) * out_size + f * cols, cols, grad + f * stride + i * cols);
    for (int i = 0; i < n; ++i) Im2Col(g, plan, x + (n0 + i) * in_size, col + i * cols, stride);
    // The first group sets dw, later ones add.
    Sgemm(false, true, g.filters, rows, static_cast<int>(stride), 1.0f, grad, col,
          n0 == n_begin ? 0.0f : 1.0f, dw);
    if (!dx) continue;
    Sgemm(true, false, rows, static_cast<int>(stride), g.filters, 1.0f, w, grad, 0.0f, col);
    if (dx_write == GradWrite::kSet) std::fill(dx + n0 * in_size, dx + (n0 + n) * in_size, 0.0f);
    for (int i = 0; i < n; ++i) Col2ImAdd(g, plan, col + i * cols, stride, dx + (n0 + i) * in_size);
  }
}

// Working floats for one thread's share of the batch, rounded up to a
// multiple of 16 (a cache line) so that threads' slices do not share lines.
size_t WorkSize(const ConvGeometry& g, int images) {
  const size_t width = static_cast<size_t>(GroupSize(g, images)) * g.col_cols();
  return (static_cast<size_t>(g.col_rows() + g.filters) * width + 15) / 16 * 16;
}

}  // namespace

// With several compute threads each takes a contiguous share of the batch
// (ParallelFor's ranges) with its own slice of scratch.
void ConvolutionForward(const ConvGeometry& g, int batch, const float* x, const float* w, const float* b,
                        float* y, std::vector<float>* scratch) {
  if (GpuOps* gpu = CurrentGpuOps()) return gpu->ConvolutionForward(g, batch, x, w, b, y);
  if (batch <= 0) return;
  const int tasks = ParallelTasks(batch);
  const size_t work = WorkSize(g, (batch + tasks - 1) / tasks);
  scratch->resize(work * tasks);
  const ShiftPlan plan = ShiftGeometry(g) ? MakeShiftPlan(g) : ShiftPlan();
  const ShiftPlan* plan_ptr = ShiftGeometry(g) ? &plan : nullptr;
  float* base = scratch->data();
  ParallelFor(batch, [&](int t, int begin, int end) {
    ForwardImages(g, plan_ptr, begin, end, x, w, b, y, base + t * work);
  });
}

// Task 0 writes dw and db directly; the others into their own slices, added
// afterwards in task order so the result does not depend on timing.
void ConvolutionBackward(const ConvGeometry& g, int batch, const float* x, const float* w, const float* dy,
                         float* dx, float* dw, float* db, GradWrite dx_write, std::vector<float>* scratch) {
  if (GpuOps* gpu = CurrentGpuOps())
    return gpu->ConvolutionBackward(g, batch, x, w, dy, dx, dw, db, dx_write);
  const size_t dw_size = static_cast<size_t>(g.filters) * g.col_rows();
  if (batch <= 0) {
    std::fill(dw, dw + dw_size, 0.0f);
    std::fill(db, db + g.filters, 0.0f);
    return;
  }
  const int tasks = ParallelTasks(batch);
  const size_t params = (dw_size + g.filters + 15) / 16 * 16;
  const size_t work = WorkSize(g, (batch + tasks - 1) / tasks) + params;
  scratch->resize(work * tasks);
  const ShiftPlan plan = ShiftGeometry(g) ? MakeShiftPlan(g) : ShiftPlan();
  const ShiftPlan* plan_ptr = ShiftGeometry(g) ? &plan : nullptr;
  float* base = scratch->data();
  ParallelFor(batch, [&](int t, int begin, int end) {
    float* mine = base + t * work;
    float* my_dw = t == 0 ? dw : mine + work - params;
    float* my_db = t == 0 ? db : my_dw + dw_size;
    BackwardImages(g, plan_ptr, begin, end, x, w, dy, dx, dx_write, my_dw, my_db, mine);
  });
  for (int t = 1; t < tasks; ++t) {
    const float* other_dw = base + (t + 1) * work - params;
    const float* other_db = other_dw + dw_size;
    for (size_t i = 0; i < dw_size; ++i) dw[i] += other_dw[i];
    for (int f = 0; f < g.filters; ++f) db[f] += other_db[f];
  }
}

}  // namespace shoal
