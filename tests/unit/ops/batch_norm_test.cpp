// Tests for lib/ops/batch_norm.h against plain sums in double: for planes
// shorter than the kernels' partial sums, as long, and longer with every
// tail, the statistics, the output and the gradients match them.
#include "ops/batch_norm.h"

#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

namespace shoal {
namespace {

std::vector<float> Uniform(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

TEST_CASE("batch norm's statistics and gradients are plain sums' for planes of every length") {
  const int batch = 3, channels = 2;
  for (int plane : {1, 7, 31, 32, 33, 49, 64, 100}) {
    INFO("plane " << plane);
    const BatchNormGeometry g{channels, plane, 1e-5f};
    const size_t n = static_cast<size_t>(batch) * channels * plane;
    // An offset mean, so that a sum losing values would show.
    const std::vector<float> x = Uniform(n, 1 + plane, 2.0f, 4.0f), dy = Uniform(n, 2 + plane, -1.0f, 1.0f);
    const std::vector<float> gamma{1.5f, 0.5f}, beta{0.25f, -0.75f};
    std::vector<float> y(n), dx(n), dgamma(channels), dbeta(channels), mean, inv_std, var;
    BatchNormTrainForward(g, batch, x.data(), gamma.data(), beta.data(), y.data(), &mean, &inv_std, &var);
    BatchNormBackward(g, batch, x.data(), dy.data(), gamma.data(), mean, inv_std, dx.data(), dgamma.data(),
                      dbeta.data(), GradWrite::kSet);
    const double count = static_cast<double>(batch) * plane;
    for (int c = 0; c < channels; ++c) {
      auto at = [&](int r, int p) { return (static_cast<size_t>(r) * channels + c) * plane + p; };
      double sum = 0.0, squares = 0.0;
      for (int r = 0; r < batch; ++r)
        for (int p = 0; p < plane; ++p) sum += x[at(r, p)];
      const double m = sum / count;
      for (int r = 0; r < batch; ++r)
        for (int p = 0; p < plane; ++p) squares += (x[at(r, p)] - m) * (x[at(r, p)] - m);
      const double inv = 1.0 / std::sqrt(squares / count + g.eps);
      CHECK(mean[c] == doctest::Approx(m).epsilon(1e-6));
      CHECK(inv_std[c] == doctest::Approx(inv).epsilon(1e-5));
      if (count > 1) CHECK(var[c] == doctest::Approx(squares / (count - 1)).epsilon(1e-5));
      double sum_dy = 0.0, sum_dy_xhat = 0.0;
      for (int r = 0; r < batch; ++r)
        for (int p = 0; p < plane; ++p) {
          const double xhat = (x[at(r, p)] - m) * inv;
          CHECK(y[at(r, p)] == doctest::Approx(gamma[c] * xhat + beta[c]).epsilon(1e-5));
          sum_dy += dy[at(r, p)];
          sum_dy_xhat += dy[at(r, p)] * xhat;
        }
      CHECK(dbeta[c] == doctest::Approx(sum_dy).epsilon(1e-5));
      CHECK(dgamma[c] == doctest::Approx(sum_dy_xhat).epsilon(1e-5));
      for (int r = 0; r < batch; ++r)
        for (int p = 0; p < plane; ++p) {
          const double xhat = (x[at(r, p)] - m) * inv;
          const double expected =
              gamma[c] * inv * (dy[at(r, p)] - sum_dy / count - xhat * sum_dy_xhat / count);
          CHECK(dx[at(r, p)] == doctest::Approx(expected).epsilon(1e-4).scale(1.0));
        }
    }
  }
}

}  // namespace
}  // namespace shoal
