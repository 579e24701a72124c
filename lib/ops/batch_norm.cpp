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

}  // namespace

// Sums in double: a channel may hold a million values.
void BatchNormTrainForward(const BatchNormGeometry& g, int batch, const float* x, const float* gamma,
                           const float* beta, float* y, std::vector<float>* mean, std::vector<float>* inv_std,
                           std::vector<float>* var) {
  mean->resize(g.channels);
  inv_std->resize(g.channels);
  var->resize(g.channels);
  const double count = static_cast<double>(batch) * g.plane;
  ForChannels(g, batch, [&](int c, const auto& at) {
    double sum = 0.0;
    for (int r = 0; r < batch; ++r)
      for (int p = 0; p < g.plane; ++p) sum += x[at(r) + p];
    const double m = sum / count;
    double squares = 0.0;
    for (int r = 0; r < batch; ++r)
      for (int p = 0; p < g.plane; ++p) {
        const double d = x[at(r) + p] - m;
        squares += d * d;
      }
    const double biased = squares / count;
    const float inv = static_cast<float>(1.0 / std::sqrt(biased + g.eps));
    (*mean)[c] = static_cast<float>(m);
    (*inv_std)[c] = inv;
    (*var)[c] = static_cast<float>(count > 1.0 ? squares / (count - 1.0) : biased);
    const float scale = gamma[c] * inv, shift = beta[c] - static_cast<float>(m) * scale;
    for (int r = 0; r < batch; ++r)
      for (int p = 0; p < g.plane; ++p) y[at(r) + p] = x[at(r) + p] * scale + shift;
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

// With x̂ = (x − mean)·inv_std and M values a channel:
//   dbeta = Σ dy,  dgamma = Σ dy·x̂,  dx = gamma·inv_std·(dy − dbeta/M − x̂·dgamma/M).
void BatchNormBackward(const BatchNormGeometry& g, int batch, const float* x, const float* dy,
                       const float* gamma, const std::vector<float>& mean, const std::vector<float>& inv_std,
                       float* dx, float* dgamma, float* dbeta, GradWrite write) {
  const double count = static_cast<double>(batch) * g.plane;
  ForChannels(g, batch, [&](int c, const auto& at) {
    const float m = mean[c], inv = inv_std[c];
    double sum_dy = 0.0, sum_dy_xhat = 0.0;
    for (int r = 0; r < batch; ++r)
      for (int p = 0; p < g.plane; ++p) {
        const size_t i = at(r) + p;
        sum_dy += dy[i];
        sum_dy_xhat += static_cast<double>(dy[i]) * ((x[i] - m) * inv);
      }
    dbeta[c] = static_cast<float>(sum_dy);
    dgamma[c] = static_cast<float>(sum_dy_xhat);
    if (!dx) return;
    const float k = gamma[c] * inv, mean_dy = static_cast<float>(sum_dy / count),
                mean_dy_xhat = static_cast<float>(sum_dy_xhat / count);
    for (int r = 0; r < batch; ++r) {
      const size_t plane = at(r);
      WriteGrad(0, g.plane, write, dx + plane, [&](size_t p) {
        return k * (dy[plane + p] - mean_dy - (x[plane + p] - m) * inv * mean_dy_xhat);
      });
    }
  });
}

}  // namespace shoal
