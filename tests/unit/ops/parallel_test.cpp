// The ops split over several compute threads (ops/parallel.h) give what the
// single-threaded path gives, up to float summation order, for batches that
// the thread count does not divide.
#include "ops/parallel.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ops/blas.h"
#include "ops/convolution.h"
#include "ops/elementwise.h"
#include "ops/fully_connected.h"
#include "ops/onednn.h"
#include "ops/pooling.h"
#include "test_util.h"

namespace shoal {
namespace {

std::vector<float> Minus(std::vector<float> a, const std::vector<float>& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] -= b[i];
  return a;
}

// Runs `fn` with `threads` compute threads and restores one thread after.
template <typename Fn>
void WithThreads(int threads, const Fn& fn) {
  SetComputeThreads(threads);
  fn();
  SetComputeThreads(1);
}

struct ConvResult {
  std::vector<float> y, dx, dw, db;
};

ConvResult RunConvolution(const ConvGeometry& g, int batch, int threads) {
  const size_t in = static_cast<size_t>(g.channels) * g.height * g.width;
  const size_t out = static_cast<size_t>(g.filters) * g.col_cols();
  const auto x = Random(batch * in, 1), w = Random(g.filters * g.col_rows(), 2);
  const auto b = Random(g.filters, 3), dy = Random(batch * out, 4);
  ConvResult r;
  r.y.assign(batch * out, 0.0f);
  r.dx = Random(batch * in, 5);  // backward adds into dx
  r.dw.assign(w.size(), 7.0f);   // and sets dw, db
  r.db.assign(b.size(), 7.0f);
  std::vector<float> scratch;
  WithThreads(threads, [&] {
    ConvolutionForward(g, batch, x.data(), w.data(), b.data(), r.y.data(), &scratch);
    ConvolutionBackward(g, batch, x.data(), w.data(), dy.data(), r.dx.data(), r.dw.data(), r.db.data(),
                        GradWrite::kAdd, &scratch);
  });
  return r;
}

TEST_CASE("threaded convolution forward and backward equal the single-threaded ones") {
  // "Same" 5x5 geometry (the shift path), and stride 2 with padding (the general path).
  const ConvGeometry geometries[] = {{3, 12, 12, 8, 5, 1, 2}, {2, 11, 9, 5, 3, 2, 1}};
  for (const ConvGeometry& g : geometries)
    for (int batch : {1, 7, 13})
      for (int threads : {2, 3}) {
        CAPTURE(batch);
        CAPTURE(threads);
        const ConvResult one = RunConvolution(g, batch, 1);
        const ConvResult many = RunConvolution(g, batch, threads);
        CheckClose(one.y, many.y, "y");
        CheckClose(one.dx, many.dx, "dx");
        CheckClose(one.dw, many.dw, "dw");
        CheckClose(one.db, many.db, "db");
      }
}

TEST_CASE("threaded fully connected, relu and max pooling equal the single-threaded ones") {
  const int batch = 37, in = 700, out = 700;  // a product the threads split
  static_assert(37.0 * 700 * 700 >= kFullyConnectedParallelMacs);
  const auto x = Random(batch * in, 11), w = Random(out * in, 12), b = Random(out, 13);
  const auto dy = Random(batch * out, 14);
  const PoolGeometry pg{5, 16, 16, 2, 2, 2};  // 2×2 windows, stride 2
  const size_t pool_in = static_cast<size_t>(batch) * 5 * 16 * 16;
  const auto px = Random(pool_in, 15), pdy = Random(pool_in / 4, 16);
  auto run = [&](int threads) {
    std::vector<std::vector<float>> r;
    WithThreads(threads, [&] {
      std::vector<float> y(batch * out), dx = Random(batch * in, 17), dw(out * in, 7.0f), db(out, 7.0f);
      FullyConnectedForward(batch, in, out, x.data(), w.data(), b.data(), y.data());
      FullyConnectedBackward(batch, in, out, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(),
                             GradWrite::kAdd);
      std::vector<float> ry(pool_in), rdx = Random(pool_in, 18);
      ReluForward(pool_in, px.data(), ry.data());
      ReluBackward(pool_in, ry.data(), px.data(), rdx.data(), GradWrite::kAdd);
      std::vector<float> py(pool_in / 4), pdx = Random(pool_in, 19);
      std::vector<int32_t> argmax;
      PoolForward(pg, batch, px.data(), py.data(), &argmax);
      PoolBackward(pg, batch, px.data(), py.data(), pdy.data(), argmax, pdx.data(), GradWrite::kAdd);
      r = {y, dx, dw, db, ry, rdx, py, pdx};
    });
    return r;
  };
  const auto one = run(1), many = run(3);
  const char* names[] = {"fc y", "fc dx", "fc dw", "fc db", "relu y", "relu dx", "pool y", "pool dx"};
  for (size_t i = 0; i < one.size(); ++i) CheckClose(one[i], many[i], names[i]);

  // Set rather than added, over NaN: what was added, less what dx held.
  WithThreads(3, [&] {
    std::vector<float> dx(batch * in, std::nanf("")), dw(out * in), db(out);
    FullyConnectedBackward(batch, in, out, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(),
                           GradWrite::kSet);
    CheckClose(Minus(one[1], Random(batch * in, 17)), dx, "fc dx set");
    std::vector<float> rdx(pool_in, std::nanf(""));
    ReluBackward(pool_in, one[4].data(), px.data(), rdx.data(), GradWrite::kSet);
    CheckClose(Minus(one[5], Random(pool_in, 18)), rdx, "relu dx set");
    std::vector<float> pdx(pool_in, std::nanf(""));
    std::vector<float> py(pool_in / 4);
    std::vector<int32_t> argmax;
    PoolForward(pg, batch, px.data(), py.data(), &argmax);
    PoolBackward(pg, batch, px.data(), py.data(), pdy.data(), argmax, pdx.data(), GradWrite::kSet);
    CheckClose(Minus(one[7], Random(pool_in, 19)), pdx, "pool dx set");
  });
}

TEST_CASE("fully connected in bf16, at 1 and 3 threads, computes on its inputs rounded to bfloat16" *
          doctest::skip(!Bf16Kernels())) {
  const int batch = 37, in = 700, out = 700;  // a product the threads split
  static_assert(37.0 * 700 * 700 >= kFullyConnectedParallelMacs);
  const auto x = Random(batch * in, 11), w = Random(out * in, 12), b = Random(out, 13),
             dy = Random(batch * out, 14);
  auto rounded = [](std::vector<float> v) {
    std::transform(v.begin(), v.end(), v.begin(), RoundToBf16);
    return v;
  };
  // The reference: float32 on the rounded inputs, whose products are exact.
  std::vector<float> y(batch * out), dx = Random(batch * in, 17), dw(out * in), db(out);
  const auto rx = rounded(x), rw = rounded(w), rdy = rounded(dy);
  FullyConnectedForward(batch, in, out, rx.data(), rw.data(), b.data(), y.data());
  FullyConnectedBackward(batch, in, out, rx.data(), rw.data(), rdy.data(), dx.data(), dw.data(), db.data(),
                         GradWrite::kAdd);
  // The bias gradient sums dy itself, in float32 whatever the precision.
  std::vector<float> unused_dw(out * in);
  FullyConnectedBackward(batch, in, out, x.data(), w.data(), dy.data(), nullptr, unused_dw.data(), db.data(),
                         GradWrite::kAdd);
  Bf16Scope bf16;
  for (int threads : {1, 3}) {
    CAPTURE(threads);
    WithThreads(threads, [&] {
      std::vector<float> y2(batch * out), dx2 = Random(batch * in, 17), dw2(out * in, 7.0f), db2(out, 7.0f);
      FullyConnectedForward(batch, in, out, x.data(), w.data(), b.data(), y2.data());
      FullyConnectedBackward(batch, in, out, x.data(), w.data(), dy.data(), dx2.data(), dw2.data(),
                             db2.data(), GradWrite::kAdd);
      CheckClose(y, y2, "fc y");
      CheckClose(dx, dx2, "fc dx");
      CheckClose(dw, dw2, "fc dw");
      CheckClose(db, db2, "fc db");
      std::vector<float> dx_set(batch * in, std::nanf(""));
      FullyConnectedBackward(batch, in, out, x.data(), w.data(), dy.data(), dx_set.data(), dw2.data(),
                             db2.data(), GradWrite::kSet);
      CheckClose(Minus(dx, Random(batch * in, 17)), dx_set, "fc dx set");
    });
  }
}

TEST_CASE("ParallelFor covers [0, n) once in contiguous ranges, and runs nested calls inline") {
  WithThreads(3, [] {
    for (int n : {1, 2, 3, 10, 101}) {
      std::vector<int> hits(n, 0);
      std::atomic<int> nested_tasks{0};
      const int tasks = ParallelTasks(n);
      CHECK(tasks == std::min(n, 3));
      ParallelFor(n, [&](int task, int begin, int end) {
        CHECK(begin == static_cast<int>(static_cast<long long>(n) * task / tasks));
        for (int i = begin; i < end; ++i) ++hits[i];
        ParallelFor(4, [&](int t, int b, int e) { nested_tasks += t == 0 && b == 0 && e == 4 ? 1 : 100; });
      });
      CHECK(std::count(hits.begin(), hits.end(), 1) == n);
      CHECK(nested_tasks.load() == std::min(n, 3));
    }
  });
}

}  // namespace
}  // namespace shoal
