#include "ops/fully_connected.h"

#include <algorithm>

#include "ops/blas.h"

namespace shoal {

void FullyConnectedForward(int batch, int in, int out, const float* x, const float* w,
                           const float* b, float* y) {
  for (int i = 0; i < batch; ++i)
    for (int j = 0; j < out; ++j) y[i * out + j] = b[j];
  Sgemm(false, true, batch, out, in, 1.0f, x, w, 1.0f, y);
}

void FullyConnectedBackward(int batch, int in, int out, const float* x, const float* w,
                            const float* dy, float* dx, float* dw, float* db) {
  Sgemm(true, false, out, in, batch, 1.0f, dy, x, 0.0f, dw);
  std::fill(db, db + out, 0.0f);
  for (int i = 0; i < batch; ++i)
    for (int j = 0; j < out; ++j) db[j] += dy[i * out + j];
  if (dx) Sgemm(false, false, batch, in, out, 1.0f, dy, w, 1.0f, dx);
}

}  // namespace shoal
