#include "ops/batch_norm.h"

#include <cmath>

#include "ops/parallel.h"

namespace shoal {
namespace {

// Runs fn(c, at(r)) for each channel c and record r, at(r) the offset of
// channel c's plane in record r; channels are split over the compute threads.
template <typename Fn>
void ForChannels(const BatchNormGeometry& g, int batch, const Fn& fn) {
  const size_t plane = static_cast<size_t>(g.plane), record = plane * g.channels;
  ParallelFor(g.channels, [&](int, int begin, int end) {
    for (int c = begin; c < end; ++c) fn(c, [&](int r) { return r * record + c * plane; });
  });
}

// Σ term(p) over a plane's n values, in double, as eight interleaved partial
// sums added in a fixed order. One running sum would wait on each addition;
// eight run side by side, and the result never depends on timing.
template <typename Term>
double PlaneSum(int n, const Term& term) {
  double part[8] = {};
  int p = 0;
  for (; p + 8 <= n; p += 8)
    for (int j = 0; j < 8; ++j) part[j] += term(p + j);
  for (; p < n; ++p) part[0] += term(p);
  return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

// A channel's values, as `at` finds its plane in each record (ForChannels).
template <typename At>
double ChannelSum(const BatchNormGeometry& g, int batch, const float* x, const At& at) {
  double sum = 0.0;
  for (int r = 0; r < batch; ++r) {
    const float* plane = x + at(r);
    sum += PlaneSum(g.plane, [&](int p) { return static_cast<double>(plane[p]); });
  }
  return sum;
}

template <typename At>
double ChannelSquares(const BatchNormGeometry& g, int batch, const float* x, double mean, const At& at) {
  double squares = 0.0;
  for (int r = 0; r < batch; ++r) {
    const float* plane = x + at(r);
    squares += PlaneSum(g.plane, [&](int p) {
      const double d = plane[p] - mean;
      return d * d;
    });
  }
  return squares;
}

// Channel c's statistics from its sum and squares over `count` values, then y.
template <typename At>
void NormalizeChannel(const BatchNormGeometry& g, int batch, int c, const float* x, const float* gamma,
                      const float* beta, double m, double squares, double count, float* y,
                      std::vector<float>* mean, std::vector<float>* inv_std, std::vector<float>* var,
                      const At& at) {
  const double biased = squares / count;
  const float inv = static_cast<float>(1.0 / std::sqrt(biased + g.eps));
  (*mean)[c] = static_cast<float>(m);
  (*inv_std)[c] = inv;
  (*var)[c] = static_cast<float>(count > 1.0 ? squares / (count - 1.0) : biased);
  const float scale = gamma[c] * inv, shift = beta[c] - static_cast<float>(m) * scale;
  for (int r = 0; r < batch; ++r)
    for (int p = 0; p < g.plane; ++p) y[at(r) + p] = x[at(r) + p] * scale + shift;
}

// Channel c's sums of dy and dy·x̂.
template <typename At>
void ChannelGradSums(const BatchNormGeometry& g, int batch, const float* x, const float* dy, float m,
                     float inv, double* sum_dy, double* sum_dy_xhat, const At& at) {
  *sum_dy = *sum_dy_xhat = 0.0;
  for (int r = 0; r < batch; ++r) {
    const size_t i = at(r);
    *sum_dy += PlaneSum(g.plane, [&](int p) { return static_cast<double>(dy[i + p]); });
    *sum_dy_xhat +=
        PlaneSum(g.plane, [&](int p) { return static_cast<double>(dy[i + p]) * ((x[i + p] - m) * inv); });
  }
}

// dx = gamma·inv_std·(dy − Σdy/M − x̂·Σdy·x̂/M) over channel c's M values.
template <typename At>
void ChannelInputGrad(const BatchNormGeometry& g, int batch, int c, const float* x, const float* dy,
                      const float* gamma, float m, float inv, double sum_dy, double sum_dy_xhat, double count,
                      float* dx, GradWrite write, const At& at) {
  const float k = gamma[c] * inv, mean_dy = static_cast<float>(sum_dy / count),
              mean_dy_xhat = static_cast<float>(sum_dy_xhat / count);
  for (int r = 0; r < batch; ++r) {
    const size_t plane = at(r);
    WriteGrad(0, g.plane, write, dx + plane, [&](size_t p) {
      return k * (dy[plane + p] - mean_dy - (x[plane + p] - m) * inv * mean_dy_xhat);
    });
  }
}

}  // namespace

// Sums in double: a channel may hold a million values. Without a group each
// channel is done in one go, its values still in cache; a group's sums are
// exchanged between the passes over every channel.
void BatchNormTrainForward(const BatchNormGeometry& g, int batch, const float* x, const float* gamma,
                           const float* beta, float* y, std::vector<float>* mean, std::vector<float>* inv_std,
                           std::vector<float>* var, const GroupSums& group) {
  mean->resize(g.channels);
  inv_std->resize(g.channels);
  var->resize(g.channels);
  const double count = static_cast<double>(batch) * g.plane;
  if (!group) {
    ForChannels(g, batch, [&](int c, const auto& at) {
      const double m = ChannelSum(g, batch, x, at) / count;
      NormalizeChannel(g, batch, c, x, gamma, beta, m, ChannelSquares(g, batch, x, m, at), count, y, mean,
                       inv_std, var, at);
    });
    return;
  }
  const size_t channels = static_cast<size_t>(g.channels);
  std::vector<double> sums(channels + 1), squares(channels + 1);
  ForChannels(g, batch, [&](int c, const auto& at) { sums[c] = ChannelSum(g, batch, x, at); });
  sums[channels] = count;
  group(&sums);
  const double total = sums[channels];
  ForChannels(g, batch,
              [&](int c, const auto& at) { squares[c] = ChannelSquares(g, batch, x, sums[c] / total, at); });
  squares[channels] = count;
  group(&squares);
  ForChannels(g, batch, [&](int c, const auto& at) {
    NormalizeChannel(g, batch, c, x, gamma, beta, sums[c] / total, squares[c], total, y, mean, inv_std, var,
                     at);
  });
}

void BatchNormInferenceForward(const BatchNormGeometry& g, int batch, const float* x, const float* gamma,
                               const float* beta, const float* running_mean, const float* running_var,
                               float* y) {
  ForChannels(g, batch, [&](int c, const auto& at) {
    const float scale = gamma[c] / std::sqrt(running_var[c] + g.eps);
    const float shift = beta[c] - running_mean[c] * scale;
    for (int r = 0; r < batch; ++r)
      for (int p = 0; p < g.plane; ++p) y[at(r) + p] = x[at(r) + p] * scale + shift;
  });
}

// With x̂ = (x − mean)·inv_std: dbeta = Σ dy and dgamma = Σ dy·x̂ over this
// worker's records, and dx from those sums over the group's.
void BatchNormBackward(const BatchNormGeometry& g, int batch, const float* x, const float* dy,
                       const float* gamma, const std::vector<float>& mean, const std::vector<float>& inv_std,
                       float* dx, float* dgamma, float* dbeta, GradWrite write, const GroupSums& group) {
  const double count = static_cast<double>(batch) * g.plane;
  const size_t channels = static_cast<size_t>(g.channels);
  // Per channel: Σdy, then Σdy·x̂; then the count of values.
  std::vector<double> sums(group ? 2 * channels + 1 : 0);
  ForChannels(g, batch, [&](int c, const auto& at) {
    double sum_dy, sum_dy_xhat;
    ChannelGradSums(g, batch, x, dy, mean[c], inv_std[c], &sum_dy, &sum_dy_xhat, at);
    dbeta[c] = static_cast<float>(sum_dy);
    dgamma[c] = static_cast<float>(sum_dy_xhat);
    if (group) {
      sums[c] = sum_dy;
      sums[channels + c] = sum_dy_xhat;
    } else if (dx) {
      ChannelInputGrad(g, batch, c, x, dy, gamma, mean[c], inv_std[c], sum_dy, sum_dy_xhat, count, dx, write,
                       at);
    }
  });
  if (!group) return;
  // Every worker of the group takes part, even one whose dx nobody wants.
  sums[2 * channels] = count;
  group(&sums);
  if (!dx) return;
  ForChannels(g, batch, [&](int c, const auto& at) {
    ChannelInputGrad(g, batch, c, x, dy, gamma, mean[c], inv_std[c], sums[c], sums[channels + c],
                     sums[2 * channels], dx, write, at);
  });
}

}  // namespace shoal
