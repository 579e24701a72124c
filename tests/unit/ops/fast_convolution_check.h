// What a FastConvolution (ops/fast_convolution.h) must give: what im2col +
// sgemm, the reference, gives.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/convolution.h"
#include "ops/fast_convolution.h"
#include "test_util.h"

namespace shoal {

// For geometry g and one batch, each tensor within `tolerance` of its largest
// magnitude (CheckClose): y; dw and db; dx added into what it held, and set
// over NaN; dw alone when no dx is wanted. Backward is given x and w at other
// addresses than Forward was (a device memory manager stages them anew):
// what Forward saw is NaN by then. With bf16_inputs, x, w and dy hold
// bfloat16 values, which a bfloat16 convolution takes without rounding.
inline void CheckAgainstIm2col(FastConvolution* fast, const ConvGeometry& g, int batch, double tolerance,
                               bool bf16_inputs = false) {
  const size_t in = size_t(batch) * g.channels * g.height * g.width;
  const size_t out = size_t(batch) * g.filters * g.out_height() * g.out_width();
  auto x = Random(in, 1), w = Random(size_t(g.filters) * g.col_rows(), 2), dy = Random(out, 4);
  const auto b = Random(g.filters, 3), dx0 = Random(in, 5);
  if (bf16_inputs)
    for (auto* v : {&x, &w, &dy}) std::transform(v->begin(), v->end(), v->begin(), RoundToBf16);
  std::vector<float> y(out), dw(w.size()), db(b.size()), dx = dx0, scratch;
  ConvolutionForward(g, batch, x.data(), w.data(), b.data(), y.data(), &scratch);
  ConvolutionBackward(g, batch, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(),
                      GradWrite::kAdd, &scratch);
  // Set, dx is that sum less what it held, whatever it held (NaN here).
  std::vector<float> dx_set_ref(in), dx_set(in, std::nanf("")), dw_set(w.size()), db_set(b.size());
  for (size_t i = 0; i < in; ++i) dx_set_ref[i] = dx[i] - dx0[i];
  ConvolutionBackward(g, batch, x.data(), w.data(), dy.data(), dx_set.data(), dw_set.data(), db_set.data(),
                      GradWrite::kSet, &scratch);
  CheckClose(dx_set_ref, dx_set, "im2col's dx (set over NaN)");
  std::fill(dx_set.begin(), dx_set.end(), std::nanf(""));

  std::vector<float> y2(out, 7.0f), dw2(w.size(), 7.0f), db2(b.size(), 7.0f), dx2 = dx0;
  std::vector<float> x_forward = x, w_forward = w;
  REQUIRE(fast->Forward(batch, x_forward.data(), w_forward.data(), b.data(), y2.data()));
  std::fill(x_forward.begin(), x_forward.end(), std::nanf(""));
  std::fill(w_forward.begin(), w_forward.end(), std::nanf(""));
  fast->Backward(batch, x.data(), w.data(), dy.data(), dx2.data(), GradWrite::kAdd, dw2.data(), db2.data());
  CheckClose(y, y2, "y", tolerance);
  CheckClose(dw, dw2, "dw", tolerance);
  CheckClose(db, db2, "db", tolerance);
  CheckClose(dx, dx2, "dx (added to what it held)", tolerance);
  fast->Backward(batch, x.data(), w.data(), dy.data(), dx_set.data(), GradWrite::kSet, dw2.data(),
                 db2.data());
  CheckClose(dx_set_ref, dx_set, "dx (set over NaN)", tolerance);
  CheckClose(dw, dw2, "dw, dx set", tolerance);

  // No dx wanted (a layer over the data): the weight gradients alone.
  std::fill(dw2.begin(), dw2.end(), 7.0f);
  REQUIRE(fast->Forward(batch, x.data(), w.data(), b.data(), y2.data()));
  fast->Backward(batch, x.data(), w.data(), dy.data(), nullptr, GradWrite::kAdd, dw2.data(), db2.data());
  CheckClose(dw, dw2, "dw without dx", tolerance);
}

}  // namespace shoal
