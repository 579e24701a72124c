// Convolution on oneDNN gives what im2col + sgemm (the reference) gives, up to
// float summation order: forward, the weight and bias gradients, and the
// data gradient added into what dx already holds; over geometries with
// strides, padding, several channels and kernels, batch sizes that change
// between calls (primitives cached per batch), at 1 and 2 threads.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops/blas.h"
#include "ops/convolution.h"
#include "ops/onednn.h"
#include "ops/onednn_convolution.h"
#include "test_util.h"

namespace shoal {
namespace {

struct Case {
  ConvGeometry g;
  std::vector<int> batches;
};

TEST_CASE("oneDNN convolution matches im2col + sgemm" * doctest::skip(!OneDnnEnabled())) {
  const Case cases[] = {
      {{1, 28, 28, 32, 5, 1, 2}, {8, 3, 8}},    // the CNN's first layer
      {{32, 14, 14, 64, 5, 1, 2}, {4, 1}},      // its second
      {{3, 11, 9, 5, 3, 2, 1}, {5, 2}},         // stride 2, odd sizes
      {{4, 7, 7, 6, 7, 1, 0}, {3}},             // kernel as large as the input
      {{2, 6, 10, 3, 1, 3, 0}, {2}},            // 1×1, stride 3
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
        const size_t in = size_t(batch) * g.channels * g.height * g.width;
        const size_t out = size_t(batch) * g.filters * g.out_height() * g.out_width();
        const auto x = Random(in, 1), w = Random(size_t(g.filters) * g.col_rows(), 2), b = Random(g.filters, 3),
                   dy = Random(out, 4), dx0 = Random(in, 5);
        std::vector<float> y(out), dw(w.size()), db(b.size()), dx = dx0, scratch;
        ConvolutionForward(g, batch, x.data(), w.data(), b.data(), y.data(), &scratch);
        ConvolutionBackward(g, batch, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(), GradWrite::kAdd,
                            &scratch);
        // Set, dx is that sum less what it held, whatever it held (NaN here).
        std::vector<float> dx_set_ref(in), dx_set(in, std::nanf("")), dw_set(w.size()), db_set(b.size());
        for (size_t i = 0; i < in; ++i) dx_set_ref[i] = dx[i] - dx0[i];
        ConvolutionBackward(g, batch, x.data(), w.data(), dy.data(), dx_set.data(), dw_set.data(), db_set.data(),
                            GradWrite::kSet, &scratch);
        CheckClose(dx_set_ref, dx_set, "im2col's dx (set over NaN)");
        std::fill(dx_set.begin(), dx_set.end(), std::nanf(""));

        // Backward is given x and w at other addresses than forward was (a
        // device memory manager stages them anew): what forward saw is gone.
        std::vector<float> y2(out, 7.0f), dw2(w.size(), 7.0f), db2(b.size(), 7.0f), dx2 = dx0;
        std::vector<float> x_forward = x, w_forward = w;
        REQUIRE(onednn->Forward(batch, x_forward.data(), w_forward.data(), b.data(), y2.data()));
        std::fill(x_forward.begin(), x_forward.end(), std::nanf(""));
        std::fill(w_forward.begin(), w_forward.end(), std::nanf(""));
        onednn->Backward(batch, x.data(), w.data(), dy.data(), dx2.data(), GradWrite::kAdd, dw2.data(), db2.data());
        CheckClose(y, y2, "y");
        CheckClose(dw, dw2, "dw");
        CheckClose(db, db2, "db");
        CheckClose(dx, dx2, "dx (added to what it held)");
        onednn->Backward(batch, x.data(), w.data(), dy.data(), dx_set.data(), GradWrite::kSet, dw2.data(), db2.data());
        CheckClose(dx_set_ref, dx_set, "dx (set over NaN)");
        CheckClose(dw, dw2, "dw, dx set");

        // No dx wanted (a layer over the data): the weight gradients alone.
        std::fill(dw2.begin(), dw2.end(), 7.0f);
        REQUIRE(onednn->Forward(batch, x.data(), w.data(), b.data(), y2.data()));
        onednn->Backward(batch, x.data(), w.data(), dy.data(), nullptr, GradWrite::kAdd, dw2.data(), db2.data());
        CheckClose(dw, dw2, "dw without dx");
      }
    }
  }
  SetComputeThreads(1);
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
