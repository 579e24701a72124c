#include "ops/lrn.h"

#include <algorithm>
#include <cmath>

#include "ops/gpu_ops.h"
#include "ops/parallel.h"

namespace shoal {
namespace {

// Channel c's window is [c − before, c + after].
int Before(const LrnGeometry& g) { return g.size / 2; }
int After(const LrnGeometry& g) { return (g.size - 1) / 2; }

// out[p] = Σ in[j][p] over the window of each channel, a running sum down the channels.
void WindowSums(const LrnGeometry& g, int before, int after, const float* in, float* out) {
  const size_t plane = static_cast<size_t>(g.plane);
  std::vector<float> running(plane, 0.0f);
  for (int j = 0; j < std::min(after, g.channels); ++j)
    for (size_t p = 0; p < plane; ++p) running[p] += in[j * plane + p];
  for (int c = 0; c < g.channels; ++c) {
    const int enters = c + after, leaves = c - before - 1;
    if (enters < g.channels)
      for (size_t p = 0; p < plane; ++p) running[p] += in[enters * plane + p];
    if (leaves >= 0)
      for (size_t p = 0; p < plane; ++p) running[p] -= in[leaves * plane + p];
    std::copy(running.begin(), running.end(), out + c * plane);
  }
}

// out[i] = s[i]^-beta for n values. Caffe's and AlexNet's beta, 0.75, is
// 1 / (√s · ∜s): two square roots vectorise where a power does not.
void InversePowers(const float* s, size_t n, float beta, float* out) {
  if (beta == 0.75f) {
    for (size_t i = 0; i < n; ++i) {
      const float root = std::sqrt(s[i]);
      out[i] = 1.0f / (root * std::sqrt(root));
    }
  } else {
    for (size_t i = 0; i < n; ++i) out[i] = std::pow(s[i], -beta);
  }
}

}  // namespace

// Records are split over the compute threads.
void LrnForward(const LrnGeometry& g, int batch, const float* x, float* y, std::vector<float>* scale) {
  if (GpuOps* gpu = CurrentGpuOps()) return gpu->LrnForward(g, batch, x, y);
  const size_t record = static_cast<size_t>(g.channels) * g.plane;
  scale->resize(record * batch);
  float* s = scale->data();
  ParallelFor(batch, [&](int, int begin, int end) {
    std::vector<float> squares(record), powers(record);
    for (int r = begin; r < end; ++r) {
      const float* xr = x + r * record;
      for (size_t i = 0; i < record; ++i) squares[i] = xr[i] * xr[i];
      float* sr = s + r * record;
      WindowSums(g, Before(g), After(g), squares.data(), sr);
      for (size_t i = 0; i < record; ++i) sr[i] = g.k + g.alpha / static_cast<float>(g.size) * sr[i];
      InversePowers(sr, record, g.beta, powers.data());
      float* yr = y + r * record;
      for (size_t i = 0; i < record; ++i) yr[i] = xr[i] * powers[i];
    }
  });
}

void LrnBackward(const LrnGeometry& g, int batch, const float* x, const float* y, const float* dy,
                 const std::vector<float>& scale, float* dx, GradWrite write) {
  if (GpuOps* gpu = CurrentGpuOps()) return gpu->LrnBackward(g, batch, x, y, dy, dx, write);
  const size_t record = static_cast<size_t>(g.channels) * g.plane;
  const float factor = 2.0f * g.alpha * g.beta / static_cast<float>(g.size);
  ParallelFor(batch, [&](int, int begin, int end) {
    std::vector<float> ratio(record), sums(record), powers(record);
    for (int r = begin; r < end; ++r) {
      const size_t at = r * record;
      for (size_t i = 0; i < record; ++i) ratio[i] = dy[at + i] * y[at + i] / scale[at + i];
      // Channel i is in channel c's window when c is in [i − after, i + before].
      WindowSums(g, After(g), Before(g), ratio.data(), sums.data());
      InversePowers(scale.data() + at, record, g.beta, powers.data());
      WriteGrad(0, record, write, dx + at,
                [&](size_t i) { return dy[at + i] * powers[i] - factor * x[at + i] * sums[i]; });
    }
  });
}

}  // namespace shoal
