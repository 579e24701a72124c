// Tests for lib/ops/rbm.cpp: the draws, the two conditionals and CD's statistics.
#include "ops/rbm.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

namespace shoal {
namespace {

TEST_CASE("SampleBernoulli draws 1 with probability p, the same draws for the same key whatever the batch") {
  const int units = 4000;
  std::vector<float> p(units);
  for (int i = 0; i < units; ++i) p[i] = static_cast<float>(i % 4) / 4.0f + 0.125f;  // 0.125 .. 0.875
  // Record 1 of a batch of two has key 7, as does the lone record.
  std::vector<float> p2(2 * units);
  std::copy(p.begin(), p.end(), p2.begin());
  std::copy(p.begin(), p.end(), p2.begin() + units);
  const uint64_t keys2[] = {3, 7}, key1[] = {7};
  std::vector<float> s2(2 * units), s1(units);
  SampleBernoulli(2, units, p2.data(), keys2, 0, s2.data());
  SampleBernoulli(1, units, p.data(), key1, 0, s1.data());
  CHECK(std::equal(s1.begin(), s1.end(), s2.begin() + units));
  CHECK(!std::equal(s1.begin(), s1.end(), s2.begin()));  // another key, other draws
  // Another draw of the same record differs; frequencies follow p.
  std::vector<float> again(units);
  SampleBernoulli(1, units, p.data(), key1, 1, again.data());
  CHECK(again != s1);
  double ones[4] = {0, 0, 0, 0};
  for (int i = 0; i < units; ++i) ones[i % 4] += s1[i];
  for (int c = 0; c < 4; ++c) {
    INFO("p = " << (c / 4.0 + 0.125));
    CHECK(std::fabs(ones[c] / (units / 4) - (c / 4.0 + 0.125)) < 0.05);  // ~5 standard errors
  }
  for (float s : s1) CHECK((s == 0.0f || s == 1.0f));
}

TEST_CASE("SampleGaussian adds standard normal noise to the mean, keyed as SampleBernoulli's draws are") {
  const int units = 20000;
  std::vector<float> mean(units, 3.0f), s(units), again(units);
  const uint64_t key[] = {11};
  SampleGaussian(1, units, mean.data(), key, 0, s.data());
  SampleGaussian(1, units, mean.data(), key, 0, again.data());
  CHECK(s == again);
  double sum = 0.0, sq = 0.0, within1 = 0.0;
  for (float x : s) {
    sum += x - 3.0;
    sq += (x - 3.0) * (x - 3.0);
    within1 += std::fabs(x - 3.0) < 1.0;
  }
  CHECK(std::fabs(sum / units) < 0.03);       // 4 standard errors of the mean
  CHECK(std::fabs(sq / units - 1.0) < 0.04);  // the variance, ~4 of its standard errors
  CHECK(std::fabs(within1 / units - 0.6827) <
        0.015);  // a normal's, not a uniform's (0.577 for unit variance)
}

TEST_CASE("the conditionals are sigmoids of the affine maps, W shared between the two directions") {
  // 2 visible, 3 hidden, 1 record.
  const float w[] = {0.5f, -1.0f, 2.0f, 0.0f, -0.25f, 0.75f};  // [hidden 3, visible 2]
  const float a[] = {0.1f, -0.2f}, b[] = {0.3f, 0.0f, -0.5f};
  const float v[] = {1.0f, 0.5f}, h[] = {1.0f, 0.0f, 1.0f};
  float ph[3], pv[2], linear[3];
  RbmHiddenMeans(HiddenUnits::kBinary, 1, 2, 3, v, w, b, ph);
  RbmHiddenMeans(HiddenUnits::kGaussian, 1, 2, 3, v, w, b, linear);
  RbmVisibleProbabilities(1, 2, 3, h, w, a, pv);
  auto sigmoid = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  CHECK(ph[0] == doctest::Approx(sigmoid(0.5 - 0.5 + 0.3)));
  CHECK(ph[1] == doctest::Approx(sigmoid(2.0 + 0.0 + 0.0)));
  CHECK(ph[2] == doctest::Approx(sigmoid(-0.25 + 0.375 - 0.5)));
  CHECK(linear[0] == doctest::Approx(0.5 - 0.5 + 0.3));  // Gaussian units: the affine map itself
  CHECK(linear[2] == doctest::Approx(-0.25 + 0.375 - 0.5));
  CHECK(pv[0] == doctest::Approx(sigmoid(0.5 - 0.25 + 0.1)));
  CHECK(pv[1] == doctest::Approx(sigmoid(-1.0 + 0.75 - 0.2)));
}

TEST_CASE("RbmGradients is the model's statistics less the data's, a batch mean") {
  // 2 records, 2 visible, 1 hidden.
  const float v0[] = {1, 0, 0, 1}, ph0[] = {0.5f, 0.25f}, vk[] = {0.5f, 0.5f, 1.0f, 0.0f},
              phk[] = {1.0f, 0.0f};
  float dw[2], da[2], db[1];
  RbmGradients(2, 2, 1, v0, ph0, vk, phk, dw, da, db);
  // dw = (Σ phk·vk − Σ ph0·v0) / 2
  CHECK(dw[0] == doctest::Approx(((1.0 * 0.5 + 0.0 * 1.0) - (0.5 * 1 + 0.25 * 0)) / 2));
  CHECK(dw[1] == doctest::Approx(((1.0 * 0.5 + 0.0 * 0.0) - (0.5 * 0 + 0.25 * 1)) / 2));
  CHECK(da[0] == doctest::Approx(((0.5 + 1.0) - (1 + 0)) / 2));
  CHECK(da[1] == doctest::Approx(((0.5 + 0.0) - (0 + 1)) / 2));
  CHECK(db[0] == doctest::Approx(((1.0 + 0.0) - (0.5 + 0.25)) / 2));
  CHECK(SquaredErrorPerRecord(2, 2, v0, vk) == doctest::Approx((0.25 + 0.25 + 1 + 1) / 2));
}

}  // namespace
}  // namespace shoal
