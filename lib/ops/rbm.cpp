#include "ops/rbm.h"

#include <cmath>
#include <cstddef>

#include "core/hash.h"
#include "ops/blas.h"
#include "ops/fully_connected.h"
#include "ops/parallel.h"

namespace shoal {
namespace {

void SigmoidInPlace(size_t n, float* x) {
  for (size_t i = 0; i < n; ++i) x[i] = 1.0f / (1.0f + std::exp(-x[i]));
}

}  // namespace

void RbmHiddenProbabilities(int batch, int visible, int hidden, const float* v, const float* w, const float* b,
                            float* ph) {
  FullyConnectedForward(batch, visible, hidden, v, w, b, ph);
  SigmoidInPlace(static_cast<size_t>(batch) * hidden, ph);
}

void RbmVisibleProbabilities(int batch, int visible, int hidden, const float* h, const float* w, const float* a,
                             float* pv) {
  // Rows of the batch split over the compute threads, as FullyConnectedForward's.
  ParallelFor(batch, [&](int, int begin, int end) {
    float* out = pv + static_cast<size_t>(begin) * visible;
    for (int r = begin; r < end; ++r)
      for (int i = 0; i < visible; ++i) pv[static_cast<size_t>(r) * visible + i] = a[i];
    Sgemm(false, false, end - begin, visible, hidden, 1.0f, h + static_cast<size_t>(begin) * hidden, w, 1.0f, out);
    SigmoidInPlace(static_cast<size_t>(end - begin) * visible, out);
  });
}

void SampleBernoulli(int batch, int units, const float* p, const uint64_t* keys, uint64_t draw, float* sample) {
  constexpr float kUnit = 1.0f / 16777216.0f;  // 2^-24: the top 24 bits make a float in [0, 1)
  for (int r = 0; r < batch; ++r) {
    const uint64_t base = Mix64(keys[r] + 0x9e3779b97f4a7c15ull * (draw + 1));
    const size_t row = static_cast<size_t>(r) * units;
    for (int i = 0; i < units; ++i) {
      const float u = static_cast<float>(Mix64(base + static_cast<uint64_t>(i)) >> 40) * kUnit;
      sample[row + i] = u < p[row + i] ? 1.0f : 0.0f;
    }
  }
}

void RbmGradients(int batch, int visible, int hidden, const float* v0, const float* ph0, const float* vk,
                  const float* phk, float* dw, float* da, float* db) {
  const float scale = 1.0f / static_cast<float>(batch);
  // dw = (phkᵀ vk − ph0ᵀ v0) / batch, rows of dw split over the threads.
  ParallelFor(hidden, [&](int, int begin, int end) {
    float* out = dw + static_cast<size_t>(begin) * visible;
    Sgemm(true, false, end - begin, visible, batch, scale, phk + begin, hidden, vk, visible, 0.0f, out, visible);
    Sgemm(true, false, end - begin, visible, batch, -scale, ph0 + begin, hidden, v0, visible, 1.0f, out, visible);
  });
  for (int i = 0; i < visible; ++i) da[i] = 0.0f;
  for (int j = 0; j < hidden; ++j) db[j] = 0.0f;
  for (int r = 0; r < batch; ++r) {
    const size_t vr = static_cast<size_t>(r) * visible, hr = static_cast<size_t>(r) * hidden;
    for (int i = 0; i < visible; ++i) da[i] += scale * (vk[vr + i] - v0[vr + i]);
    for (int j = 0; j < hidden; ++j) db[j] += scale * (phk[hr + j] - ph0[hr + j]);
  }
}

double SquaredErrorPerRecord(int batch, int units, const float* x, const float* y) {
  double sum = 0.0;
  const size_t n = static_cast<size_t>(batch) * units;
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - y[i];
    sum += d * d;
  }
  return batch > 0 ? sum / batch : 0.0;
}

}  // namespace shoal
