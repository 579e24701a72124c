// Tests for lib/ops/elementwise.h's squashing runs, on oneDNN's kernels where
// it computes and, as ctest's unit_without_onednn, on libm's expf.
#include "ops/elementwise.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "ops/onednn.h"

namespace shoal {
namespace {

// Values across the functions' range, their saturation and both infinities,
// at a length that is no multiple of a vector's.
std::vector<float> Inputs() {
  std::vector<float> x;
  for (int i = -2000; i <= 2000; ++i) x.push_back(i / 100.0f);
  for (float v : {-100.0f, 100.0f, -1e-7f, 1e-7f, 0.0f, -0.0f, -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::infinity()})
    x.push_back(v);
  return x;
}

template <typename Fn>
void CheckRun(void (*run)(size_t, const float*, float*), const Fn& exact) {
  INFO("oneDNN: " << OneDnnDescription());
  const std::vector<float> inputs = Inputs();
  // Short runs (the scalar loop) and long ones, one after another on this thread.
  for (size_t length :
       {size_t{1}, size_t{7}, size_t{63}, size_t{64}, size_t{65}, size_t{100}, inputs.size()}) {
    INFO("length " << length);
    const std::vector<float> x(inputs.end() - length, inputs.end());  // the infinities come last
    std::vector<float> y(x.size(), std::nanf("")), in_place = x;
    run(x.size(), x.data(), y.data());
    run(in_place.size(), in_place.data(), in_place.data());
    for (size_t i = 0; i < x.size(); ++i) {
      INFO("x = " << x[i]);
      CHECK(std::fabs(y[i] - exact(static_cast<double>(x[i]))) <= 1e-6);
      CHECK(in_place[i] == y[i]);
    }
  }
  run(0, nullptr, nullptr);  // an empty run touches nothing
}

TEST_CASE("LogisticRun computes 1 / (1 + e^-x) to within 1e-6, in place as well") {
  CheckRun(LogisticRun, [](double v) { return 1.0 / (1.0 + std::exp(-v)); });
}

TEST_CASE("TanhRun computes tanh x to within 1e-6, in place as well") {
  CheckRun(TanhRun, [](double v) { return std::tanh(v); });
}

}  // namespace
}  // namespace shoal
