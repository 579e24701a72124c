#include "ops/convolution.h"

#include <algorithm>

#include "ops/blas.h"

namespace shoal {
namespace {

void Im2Col(const ConvGeometry& g, const float* x, float* col) {
  const int oh = g.out_height(), ow = g.out_width();
  for (int c = 0; c < g.channels; ++c)
    for (int ki = 0; ki < g.kernel; ++ki)
      for (int kj = 0; kj < g.kernel; ++kj) {
        float* row = col + ((c * g.kernel + ki) * g.kernel + kj) * oh * ow;
        const float* plane = x + c * g.height * g.width;
        for (int i = 0; i < oh; ++i) {
          int h = i * g.stride - g.pad + ki;
          float* out = row + i * ow;
          if (h < 0 || h >= g.height) {
            std::fill(out, out + ow, 0.0f);
            continue;
          }
          for (int j = 0; j < ow; ++j) {
            int w = j * g.stride - g.pad + kj;
            out[j] = (w >= 0 && w < g.width) ? plane[h * g.width + w] : 0.0f;
          }
        }
      }
}

void Col2ImAdd(const ConvGeometry& g, const float* col, float* x) {
  const int oh = g.out_height(), ow = g.out_width();
  for (int c = 0; c < g.channels; ++c)
    for (int ki = 0; ki < g.kernel; ++ki)
      for (int kj = 0; kj < g.kernel; ++kj) {
        const float* row = col + ((c * g.kernel + ki) * g.kernel + kj) * oh * ow;
        float* plane = x + c * g.height * g.width;
        for (int i = 0; i < oh; ++i) {
          int h = i * g.stride - g.pad + ki;
          if (h < 0 || h >= g.height) continue;
          for (int j = 0; j < ow; ++j) {
            int w = j * g.stride - g.pad + kj;
            if (w >= 0 && w < g.width) plane[h * g.width + w] += row[i * ow + j];
          }
        }
      }
}

}  // namespace

void ConvolutionForward(const ConvGeometry& g, int batch, const float* x, const float* w,
                        const float* b, float* y, std::vector<float>* col) {
  const int rows = g.col_rows(), cols = g.col_cols();
  col->resize(static_cast<size_t>(rows) * cols);
  const size_t in_size = static_cast<size_t>(g.channels) * g.height * g.width;
  const size_t out_size = static_cast<size_t>(g.filters) * cols;
  for (int n = 0; n < batch; ++n) {
    Im2Col(g, x + n * in_size, col->data());
    float* yn = y + n * out_size;
    for (int f = 0; f < g.filters; ++f) std::fill(yn + f * cols, yn + (f + 1) * cols, b[f]);
    Sgemm(false, false, g.filters, cols, rows, 1.0f, w, col->data(), 1.0f, yn);
  }
}

void ConvolutionBackward(const ConvGeometry& g, int batch, const float* x, const float* w,
                         const float* dy, float* dx, float* dw, float* db,
                         std::vector<float>* col) {
  const int rows = g.col_rows(), cols = g.col_cols();
  col->resize(static_cast<size_t>(rows) * cols);
  const size_t in_size = static_cast<size_t>(g.channels) * g.height * g.width;
  const size_t out_size = static_cast<size_t>(g.filters) * cols;
  for (int n = 0; n < batch; ++n) {
    const float* dyn = dy + n * out_size;
    for (int f = 0; f < g.filters; ++f) {
      float s = 0.0f;
      for (int i = 0; i < cols; ++i) s += dyn[f * cols + i];
      db[f] += s;
    }
    Im2Col(g, x + n * in_size, col->data());
    Sgemm(false, true, g.filters, rows, cols, 1.0f, dyn, col->data(), 1.0f, dw);
    if (dx) {
      Sgemm(true, false, rows, cols, g.filters, 1.0f, w, dyn, 0.0f, col->data());
      Col2ImAdd(g, col->data(), dx + n * in_size);
    }
  }
}

}  // namespace shoal
