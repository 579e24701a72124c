// Winograd's convolution gives what im2col + sgemm (the reference) gives, up
// to its rounding: forward, the weight and bias gradients, the data gradient
// added into or set over what dx holds; for every kernel it takes (2 to 5),
// every padding, outputs that end inside a tile, images whose tiles span
// several sgemm batches, batch sizes that change between calls, at 1 and 2
// threads.
#include "ops/winograd_convolution.h"

#include <doctest/doctest.h>

#include <vector>

#include "fast_convolution_check.h"
#include "ops/blas.h"
#include "test_util.h"

namespace shoal {
namespace {

// Winograd's transforms scale by factors from 1/90 to 16 and sum 36 or 64 terms:
// its rounding is some times float's, more than a direct sum's (measured
// worst here 7e-6 of the largest magnitude, on 6 × 6 and 8 × 8 tiles alike).
constexpr double kTolerance = 3e-5;

struct Case {
  ConvGeometry g;
  std::vector<int> batches;
};

TEST_CASE("Winograd convolution matches im2col + sgemm") {
  const Case cases[] = {
      {{32, 14, 14, 64, 5, 1, 2}, {4, 1, 3}},  // the Fashion-MNIST CNN's second layer
      {{32, 9, 11, 32, 3, 1, 1}, {3}},         // 3 × 3: 4 × 4 outputs a tile, the last ones partly outside
      {{32, 8, 8, 40, 5, 1, 0}, {2}},          // no padding
      {{16, 12, 12, 16, 5, 1, 2}, {2}},        // the fewest channels it takes
      {{33, 7, 6, 32, 4, 1, 3}, {2}},          // 4 × 4, the most padding it takes; channels off the lanes
      {{32, 5, 7, 34, 2, 1, 1}, {2}},          // 2 × 2: 5 × 5 outputs a tile
      {{32, 40, 40, 32, 3, 1, 1}, {2}},        // a batch of tile rows spans two images
      {{32, 40, 40, 32, 5, 1, 2}, {2}},        // the same on 8 × 8 tiles
  };
  for (int threads : {1, 2}) {
    SetComputeThreads(threads);
    for (const Case& c : cases) {
      const ConvGeometry& g = c.g;
      REQUIRE(WinogradTakes(g));
      auto winograd = NewWinogradConvolution(g);
      REQUIRE(winograd);
      for (int batch : c.batches) {
        CAPTURE(threads);
        CAPTURE(g.channels);
        CAPTURE(g.kernel);
        CAPTURE(g.pad);
        CAPTURE(batch);
        CheckAgainstIm2col(winograd.get(), g, batch, kTolerance);
      }
    }
  }
  SetComputeThreads(1);
}

TEST_CASE(
    "Winograd takes stride 1, kernels 2 to 5, padding below the kernel, 16 channels or more (32 for 3 x 3), "
    "16 tiles a group") {
  CHECK(WinogradTakes({32, 8, 8, 32, 3, 1, 2}));
  CHECK_FALSE(WinogradTakes({32, 8, 8, 32, 3, 2, 1}));    // stride 2
  CHECK_FALSE(WinogradTakes({32, 8, 8, 32, 1, 1, 0}));    // 1 × 1: nothing to save
  CHECK_FALSE(WinogradTakes({32, 8, 8, 32, 7, 1, 3}));    // 7 × 7: beyond the kernels it has tiles for
  CHECK_FALSE(WinogradTakes({32, 8, 8, 32, 3, 1, 3}));    // pad as large as the kernel
  CHECK_FALSE(WinogradTakes({1, 28, 28, 32, 5, 1, 2}));   // one channel in
  CHECK(WinogradTakes({16, 28, 28, 16, 5, 1, 2}));        // sixteen in and out
  CHECK_FALSE(WinogradTakes({16, 28, 28, 32, 3, 1, 1}));  // sixteen in, 3 × 3
  CHECK(WinogradTakes({64, 8, 8, 64, 3, 1, 1}));          // ResNet-20's last stage: 32 tiles a group
  CHECK_FALSE(WinogradTakes({384, 3, 3, 384, 3, 1, 1}));  // AlexNet's conv4: one tile an image, 8 a group
  CHECK_FALSE(WinogradTakes({96, 7, 7, 256, 5, 1, 2}));   // AlexNet's conv2: 8 tiles a group
  CHECK_FALSE(WinogradTakes({32, 28, 28, 31, 3, 1, 1}));  // thirty-one out, 3 × 3
  CHECK_FALSE(WinogradTakes({15, 28, 28, 32, 5, 1, 2}));  // fifteen in
  CHECK_FALSE(WinogradTakes({64, 8, 8, 15, 5, 1, 2}));    // fifteen out
  CHECK(NewWinogradConvolution({1, 28, 28, 32, 5, 1, 2}) == nullptr);
}

TEST_CASE("Winograd gives the same bits every time") {
  const ConvGeometry g{32, 12, 12, 32, 3, 1, 1};
  const int batch = 6;
  const auto x = Random(size_t(batch) * 32 * 144, 1), w = Random(32 * 32 * 9, 2), b = Random(32, 3),
             dy = Random(size_t(batch) * 32 * 144, 4);
  std::vector<float> first_y, first_dw, first_dx;
  for (int run = 0; run < 3; ++run) {
    auto winograd = NewWinogradConvolution(g);
    std::vector<float> y(dy.size()), dw(w.size()), db(32), dx(x.size(), 0.0f);
    REQUIRE(winograd->Forward(batch, x.data(), w.data(), b.data(), y.data()));
    winograd->Backward(batch, x.data(), w.data(), dy.data(), dx.data(), GradWrite::kAdd, dw.data(),
                       db.data());
    if (run == 0) {
      first_y = y;
      first_dw = dw;
      first_dx = dx;
    }
    CHECK(y == first_y);
    CHECK(dw == first_dw);
    CHECK(dx == first_dx);
  }
}

}  // namespace
}  // namespace shoal
