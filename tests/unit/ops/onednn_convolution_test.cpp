// Convolution on oneDNN gives what im2col + sgemm (the reference) gives, up to
// float summation order: forward, the weight and bias gradients, and the
// data gradient added into what dx already holds; over geometries with
// strides, padding, several channels and kernels, batch sizes that change
// between calls (primitives cached per batch), at 1 and 2 threads; and the
// same in bfloat16 on inputs that are bfloat16 values.
#include "ops/onednn_convolution.h"

#include <doctest/doctest.h>

#include <vector>

#include "fast_convolution_check.h"
#include "ops/blas.h"
#include "ops/fast_convolution.h"
#include "ops/onednn.h"
#include "test_util.h"

namespace shoal {
namespace {

struct Case {
  ConvGeometry g;
  std::vector<int> batches;
};

TEST_CASE("oneDNN convolution matches im2col + sgemm" * doctest::skip(!OneDnnEnabled())) {
  const Case cases[] = {
      {{1, 28, 28, 32, 5, 1, 2}, {8, 3, 8}},  // the CNN's first layer
      {{32, 14, 14, 64, 5, 1, 2}, {4, 1}},    // its second
      {{3, 11, 9, 5, 3, 2, 1}, {5, 2}},       // stride 2, odd sizes
      {{4, 7, 7, 6, 7, 1, 0}, {3}},           // kernel as large as the input
      {{2, 6, 10, 3, 1, 3, 0}, {2}},          // 1×1, stride 3
  };
  for (int threads : {1, 2}) {
    SetComputeThreads(threads);
    for (const Case& c : cases) {
      const ConvGeometry& g = c.g;
      auto onednn = NewOneDnnConvolution(g);
      REQUIRE(onednn);
      for (int batch : c.batches) {
        CAPTURE(threads);
        CAPTURE(g.channels);
        CAPTURE(g.kernel);
        CAPTURE(batch);
        CheckAgainstIm2col(onednn.get(), g, batch, 1e-5);
      }
    }
  }
  SetComputeThreads(1);
}

TEST_CASE("oneDNN convolution in bf16 matches im2col on bfloat16 inputs" * doctest::skip(!Bf16Kernels())) {
  Bf16Scope bf16;
  const Case cases[] = {
      {{1, 28, 28, 32, 5, 1, 2}, {8, 3}},
      {{16, 16, 16, 16, 3, 1, 1}, {4}},  // ResNet-20's first stage, at a quarter of its side
      {{3, 11, 9, 5, 3, 2, 1}, {5, 2}},
  };
  for (int threads : {1, 2}) {
    SetComputeThreads(threads);
    for (const Case& c : cases) {
      auto fast = NewFastConvolution(c.g);  // oneDNN's, also where Winograd would take it in float32
      REQUIRE(fast);
      for (int batch : c.batches) {
        CAPTURE(threads);
        CAPTURE(c.g.channels);
        CAPTURE(batch);
        CheckAgainstIm2col(fast.get(), c.g, batch, 1e-5, /*bf16_inputs=*/true);
      }
    }
  }
  SetComputeThreads(1);
  // 1 + 2^-10 has no bfloat16: a 1x1 convolution of it by 1 gives 1.
  const ConvGeometry g{1, 4, 4, 1, 1, 1, 0};
  auto fast = NewFastConvolution(g);
  const std::vector<float> x(16, 1.0f + 1.0f / 1024), w{1.0f}, b{0.0f};
  std::vector<float> y(16);
  REQUIRE(fast->Forward(1, x.data(), w.data(), b.data(), y.data()));
  CHECK(y == std::vector<float>(16, 1.0f));
}

TEST_CASE("the same inputs give the same bits every time" * doctest::skip(!OneDnnEnabled())) {
  const ConvGeometry g{8, 12, 12, 16, 3, 1, 1};
  const int batch = 6;
  const auto x = Random(size_t(batch) * 8 * 144, 1), w = Random(16 * 72, 2), b = Random(16, 3),
             dy = Random(size_t(batch) * 16 * 144, 4);
  std::vector<float> first_dw;
  for (int run = 0; run < 3; ++run) {
    auto onednn = NewOneDnnConvolution(g);
    std::vector<float> y(dy.size()), dw(w.size()), db(16), dx(x.size(), 0.0f);
    REQUIRE(onednn->Forward(batch, x.data(), w.data(), b.data(), y.data()));
    onednn->Backward(batch, x.data(), w.data(), dy.data(), dx.data(), GradWrite::kAdd, dw.data(), db.data());
    if (run == 0) first_dw = dw;
    CHECK(dw == first_dw);
  }
}

}  // namespace
}  // namespace shoal
