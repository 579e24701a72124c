#include "ops/rbm.h"

#include <cmath>
#include <cstddef>

#include "core/hash.h"
#include "ops/blas.h"
#include "ops/elementwise.h"
#include "ops/fully_connected.h"
#include "ops/parallel.h"

namespace shoal {

void RbmHiddenMeans(HiddenUnits units, int batch, int visible, int hidden, const float* v, const float* w,
                    const float* b, float* mean) {
  FullyConnectedForward(batch, visible, hidden, v, w, b, mean);
  if (units == HiddenUnits::kBinary) SigmoidForward(static_cast<size_t>(batch) * hidden, mean, mean);
}

void RbmVisibleProbabilities(int batch, int visible, int hidden, const float* h, const float* w,
                             const float* a, float* pv) {
  // Rows of the batch split over the compute threads, as FullyConnectedForward's.
  ParallelFor(batch, [&](int, int begin, int end) {
    float* out = pv + static_cast<size_t>(begin) * visible;
    for (int r = begin; r < end; ++r)
      for (int i = 0; i < visible; ++i) pv[static_cast<size_t>(r) * visible + i] = a[i];
    Sgemm(false, false, end - begin, visible, hidden, 1.0f, h + static_cast<size_t>(begin) * hidden, w, 1.0f,
          out);
    SigmoidForward(static_cast<size_t>(end - begin) * visible, out, out);
  });
}

namespace {

// Record r's generator for `draw`: unit i's 64 random bits are Mix64(base + i).
uint64_t DrawBase(uint64_t key, uint64_t draw) { return Mix64(key + 0x9e3779b97f4a7c15ull * (draw + 1)); }

}  // namespace

void SampleBernoulli(int batch, int units, const float* p, const uint64_t* keys, uint64_t draw,
                     float* sample) {
  for (int r = 0; r < batch; ++r) {
    const uint64_t base = DrawBase(keys[r], draw);
    const size_t row = static_cast<size_t>(r) * units;
    for (int i = 0; i < units; ++i)
      sample[row + i] = UnitDraw(base, static_cast<uint64_t>(i)) < p[row + i] ? 1.0f : 0.0f;
  }
}

void SampleGaussian(int batch, int units, const float* mean, const uint64_t* keys, uint64_t draw,
                    float* sample) {
  constexpr double kTwoPi = 6.283185307179586;
  for (int r = 0; r < batch; ++r) {
    const uint64_t base = DrawBase(keys[r], draw);
    const size_t row = static_cast<size_t>(r) * units;
    for (int i = 0; i < units; ++i) {
      // One 64-bit draw gives Box–Muller's two uniforms (32 bits each; u1 in (0, 1]).
      const uint64_t bits = Mix64(base + static_cast<uint64_t>(i));
      const double u1 = (static_cast<double>(bits >> 32) + 1.0) / 4294967296.0;
      const double u2 = static_cast<double>(bits & 0xffffffffu) / 4294967296.0;
      sample[row + i] =
          mean[row + i] + static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2));
    }
  }
}

void SampleHidden(HiddenUnits units, int batch, int hidden, const float* mean, const uint64_t* keys,
                  uint64_t draw, float* sample) {
  if (units == HiddenUnits::kBinary)
    SampleBernoulli(batch, hidden, mean, keys, draw, sample);
  else
    SampleGaussian(batch, hidden, mean, keys, draw, sample);
}

void RbmGradients(int batch, int visible, int hidden, const float* v0, const float* ph0, const float* vk,
                  const float* phk, float* dw, float* da, float* db) {
  const float scale = 1.0f / static_cast<float>(batch);
  // dw = (phkᵀ vk − ph0ᵀ v0) / batch, rows of dw split over the threads.
  ParallelFor(hidden, [&](int, int begin, int end) {
    float* out = dw + static_cast<size_t>(begin) * visible;
    Sgemm(true, false, end - begin, visible, batch, scale, phk + begin, hidden, vk, visible, 0.0f, out,
          visible);
    Sgemm(true, false, end - begin, visible, batch, -scale, ph0 + begin, hidden, v0, visible, 1.0f, out,
          visible);
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
