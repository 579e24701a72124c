// Tests for tests/unit/gradient_check.h: the checker catches a wrong gradient.
#include "gradient_check.h"

#include <doctest/doctest.h>

#include <cmath>

namespace shoal {
namespace {

TEST_CASE("the gradient checker accepts a right gradient and catches a wrong one") {
  Tensor x({3});
  x[0] = 0.5f, x[1] = -1.0f, x[2] = 2.0f;
  Tensor g({3});
  auto objective = [&] {  // Σ x³
    double j = 0.0;
    for (size_t i = 0; i < x.size(); ++i) j += std::pow(static_cast<double>(x[i]), 3);
    return j;
  };
  float factor = 3.0f;
  auto backward = [&] {
    for (size_t i = 0; i < x.size(); ++i) g[i] = factor * x[i] * x[i];
  };
  GradientReport right = CompareGradients(objective, backward, {{"x", &x, &g}});
  CHECK(right.checked == 3);
  CHECK(right.mismatches == 0);
  factor = 3.1f;  // off by 3%: beyond the 1% tolerance
  GradientReport wrong = CompareGradients(objective, backward, {{"x", &x, &g}});
  CHECK(wrong.mismatches == 3);
  CHECK(wrong.first.find("variable 'x' element 0") != std::string::npos);
}

}  // namespace
}  // namespace shoal
