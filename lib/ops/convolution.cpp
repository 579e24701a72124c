#include "ops/convolution.h"

#include <algorithm>
#include <cstring>

#include "ops/blas.h"

namespace shoal {
namespace {

// Images are convolved in groups: the group's im2col columns sit side by side
// ([rows, group·cols]), so one sgemm covers the group. Per-image products are
// too thin (N = Ho·Wo) for sgemm to run near peak; a whole batch's columns
// would not fit in cache. This keeps the columns near kColumnBudget floats.
constexpr size_t kColumnBudget = 1 << 20;

int GroupSize(const ConvGeometry& g, int batch) {
  size_t per_image = static_cast<size_t>(g.col_rows()) * g.col_cols();
  return static_cast<int>(std::clamp<size_t>(kColumnBudget / per_image, 1, batch));
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

// Writes image x's columns into col, whose rows are `stride` floats apart.
void Im2Col(const ConvGeometry& g, const float* x, float* col, size_t stride) {
  const int oh = g.out_height(), ow = g.out_width();
  for (int c = 0; c < g.channels; ++c)
    for (int ki = 0; ki < g.kernel; ++ki)
      for (int kj = 0; kj < g.kernel; ++kj) {
        const ValidRange v = ValidColumns(g, kj);
        float* row = col + ((c * g.kernel + ki) * g.kernel + kj) * stride;
        const float* plane = x + c * g.height * g.width;
        for (int i = 0; i < oh; ++i) {
          const int h = i * g.stride - g.pad + ki;
          float* out = row + i * ow;
          if (h < 0 || h >= g.height) {
            std::fill(out, out + ow, 0.0f);
            continue;
          }
          const float* in = plane + h * g.width - g.pad + kj;
          std::fill(out, out + v.lo, 0.0f);
          if (g.stride == 1) {
            std::memcpy(out + v.lo, in + v.lo, sizeof(float) * (v.hi - v.lo));
          } else {
            for (int j = v.lo; j < v.hi; ++j) out[j] = in[j * g.stride];
          }
          std::fill(out + v.hi, out + ow, 0.0f);
        }
      }
}

// Adds columns back into image x (the adjoint of Im2Col).
void Col2ImAdd(const ConvGeometry& g, const float* col, size_t stride, float* x) {
  const int oh = g.out_height(), ow = g.out_width();
  for (int c = 0; c < g.channels; ++c)
    for (int ki = 0; ki < g.kernel; ++ki)
      for (int kj = 0; kj < g.kernel; ++kj) {
        const ValidRange v = ValidColumns(g, kj);
        const float* row = col + ((c * g.kernel + ki) * g.kernel + kj) * stride;
        float* plane = x + c * g.height * g.width;
        for (int i = 0; i < oh; ++i) {
          const int h = i * g.stride - g.pad + ki;
          if (h < 0 || h >= g.height) continue;
          float* out = plane + h * g.width - g.pad + kj;
          const float* in = row + i * ow;
          if (g.stride == 1) {
            for (int j = v.lo; j < v.hi; ++j) out[j] += in[j];
          } else {
            for (int j = v.lo; j < v.hi; ++j) out[j * g.stride] += in[j];
          }
        }
      }
}

}  // namespace

void ConvolutionForward(const ConvGeometry& g, int batch, const float* x, const float* w,
                        const float* b, float* y, std::vector<float>* scratch) {
  const int rows = g.col_rows(), cols = g.col_cols(), group = GroupSize(g, batch);
  const size_t in_size = static_cast<size_t>(g.channels) * g.height * g.width;
  const size_t out_size = static_cast<size_t>(g.filters) * cols;
  const size_t width = static_cast<size_t>(group) * cols;
  scratch->resize(rows * width + g.filters * width);
  float* col = scratch->data();
  float* out = col + rows * width;
  for (int n0 = 0; n0 < batch; n0 += group) {
    const int n = std::min(group, batch - n0);
    const size_t stride = static_cast<size_t>(n) * cols;
    for (int i = 0; i < n; ++i) Im2Col(g, x + (n0 + i) * in_size, col + i * cols, stride);
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

void ConvolutionBackward(const ConvGeometry& g, int batch, const float* x, const float* w,
                         const float* dy, float* dx, float* dw, float* db,
                         std::vector<float>* scratch) {
  const int rows = g.col_rows(), cols = g.col_cols(), group = GroupSize(g, batch);
  const size_t in_size = static_cast<size_t>(g.channels) * g.height * g.width;
  const size_t out_size = static_cast<size_t>(g.filters) * cols;
  const size_t width = static_cast<size_t>(group) * cols;
  scratch->resize(rows * width + g.filters * width);
  float* col = scratch->data();
  float* grad = col + rows * width;
  for (int n0 = 0; n0 < batch; n0 += group) {
    const int n = std::min(group, batch - n0);
    const size_t stride = static_cast<size_t>(n) * cols;
    // Gather dy into [filters, n·cols], summing the bias gradient on the way.
    for (int i = 0; i < n; ++i)
      for (int f = 0; f < g.filters; ++f) {
        const float* src = dy + (n0 + i) * out_size + f * cols;
        float* dst = grad + f * stride + i * cols;
        float s = 0.0f;
        for (int p = 0; p < cols; ++p) {
          dst[p] = src[p];
          s += src[p];
        }
        db[f] += s;
      }
    for (int i = 0; i < n; ++i) Im2Col(g, x + (n0 + i) * in_size, col + i * cols, stride);
    Sgemm(false, true, g.filters, rows, static_cast<int>(stride), 1.0f, grad, col, 1.0f, dw);
    if (!dx) continue;
    Sgemm(true, false, rows, static_cast<int>(stride), g.filters, 1.0f, w, grad, 0.0f, col);
    for (int i = 0; i < n; ++i) Col2ImAdd(g, col + i * cols, stride, dx + (n0 + i) * in_size);
  }
}

}  // namespace shoal
