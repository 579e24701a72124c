// Tests for lib/ops/pooling.h against the plainest loop over each window's
// input cells: for every window shape, stride, padding and rounding, max
// pooling's outputs and winners and average pooling's outputs are that
// loop's bit for bit, ties and infinities included, and the gradients
// match it, added or set (max pooling's set ones bit for bit), on one thread
// and on two. A ReLU done in max pooling's passes (PoolInput::kRelu) gives
// the two ops' bits apart.
#include "ops/pooling.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "ops/blas.h"
#include "ops/elementwise.h"

namespace shoal {
namespace {

struct Reference {
  std::vector<float> y, dx, dx_set;  // dx_set: max pooling's gradient from zero
  std::vector<int32_t> argmax;
};

// The window's input cells, in row-major order; max keeps the first largest.
Reference ReferencePool(const PoolGeometry& g, int batch, const std::vector<float>& x,
                        const std::vector<float>& dy, const std::vector<float>& dx0) {
  const int oh = g.out_height(), ow = g.out_width(), hw = g.height * g.width;
  Reference r;
  r.y.resize(static_cast<size_t>(batch) * g.channels * oh * ow);
  r.argmax.resize(r.y.size());
  r.dx = dx0;
  r.dx_set.assign(dx0.size(), 0.0f);
  for (int p = 0; p < batch * g.channels; ++p)
    for (int i = 0; i < oh; ++i)
      for (int j = 0; j < ow; ++j) {
        const int top = i * g.stride - g.pad, left = j * g.stride - g.pad;
        const int bottom = std::min(top + g.kernel_h, g.height + g.pad);
        const int right = std::min(left + g.kernel_w, g.width + g.pad);
        const int count = (bottom - top) * (right - left);
        float best = -std::numeric_limits<float>::infinity(), sum = 0.0f;
        int32_t where = std::max(top, 0) * g.width + std::max(left, 0);
        for (int h = std::max(top, 0); h < std::min(bottom, g.height); ++h)
          for (int w = std::max(left, 0); w < std::min(right, g.width); ++w) {
            const float v = x[p * hw + h * g.width + w];
            sum += v;
            if (v > best) best = v, where = h * g.width + w;
          }
        const size_t o = (static_cast<size_t>(p) * oh + i) * ow + j;
        r.y[o] = g.kind == PoolKind::kMax ? best : sum / static_cast<float>(count);
        r.argmax[o] = where;
        if (g.kind == PoolKind::kMax) {
          r.dx[p * hw + where] += dy[o];
          r.dx_set[p * hw + where] += dy[o];
          continue;
        }
        for (int h = std::max(top, 0); h < std::min(bottom, g.height); ++h)
          for (int w = std::max(left, 0); w < std::min(right, g.width); ++w)
            r.dx[p * hw + h * g.width + w] += dy[o] / static_cast<float>(count);
      }
  return r;
}

void CheckAgainstReference(const PoolGeometry& g, int batch, std::mt19937* rng) {
  const size_t in = static_cast<size_t>(batch) * g.channels * g.height * g.width;
  const size_t out = static_cast<size_t>(batch) * g.channels * g.out_height() * g.out_width();
  // Few distinct values, so that windows hold ties; an infinity now and then.
  std::uniform_int_distribution<int> level(-3, 3);
  std::vector<float> x(in), dy(out), dx0(in);
  for (float& v : x) {
    const int l = level(*rng);
    v = l == 3 ? -std::numeric_limits<float>::infinity() : static_cast<float>(l);
  }
  // -0 among the gradients: a cleared gradient adds it as +0.
  for (float& v : dy) {
    const int l = level(*rng);
    v = l == -3 ? -0.0f : static_cast<float>(l) / 8.0f;
  }
  for (float& v : dx0) v = static_cast<float>(level(*rng)) / 4.0f;
  const Reference want = ReferencePool(g, batch, x, dy, dx0);
  std::vector<float> y(out);
  std::vector<int32_t> argmax;
  PoolForward(g, batch, x.data(), y.data(), &argmax);
  for (size_t o = 0; o < out; ++o) {
    INFO("output " << o);
    REQUIRE(std::memcmp(&y[o], &want.y[o], sizeof(float)) == 0);
    if (g.kind == PoolKind::kMax) REQUIRE(argmax[o] == want.argmax[o]);
  }
  std::vector<float> added = dx0, set(in, 9.0f);
  PoolBackward(g, batch, x.data(), y.data(), dy.data(), argmax, added.data(), GradWrite::kAdd);
  PoolBackward(g, batch, x.data(), y.data(), dy.data(), argmax, set.data(), GradWrite::kSet);
  for (size_t k = 0; k < in; ++k) {
    INFO("input " << k);
    REQUIRE(added[k] == doctest::Approx(want.dx[k]).epsilon(1e-6));
    REQUIRE(set[k] == doctest::Approx(want.dx[k] - dx0[k]).epsilon(1e-6));
    if (g.kind == PoolKind::kMax) REQUIRE(std::memcmp(&set[k], &want.dx_set[k], sizeof(float)) == 0);
  }
}

TEST_CASE("pooling: every window shape, stride, pad and rounding gives the plain loop's results") {
  std::mt19937 rng(7);
  for (PoolKind kind : {PoolKind::kMax, PoolKind::kAvg})
    for (int kernel = 1; kernel <= 4; ++kernel)
      for (int stride = 1; stride <= 4; ++stride)
        for (int pad = 0; pad <= kernel / 2; ++pad)
          for (bool ceil_mode : {false, true})
            for (int side : {kernel, 5, 8}) {
              PoolGeometry g{2,      side, side + 1, kernel,   kernel + (kernel == 3 ? -1 : 0),
                             stride, pad,  kind,     ceil_mode};
              INFO("kind " << (kind == PoolKind::kMax ? "max" : "avg") << ", kernel " << g.kernel_h << "x"
                           << g.kernel_w << ", stride " << stride << ", pad " << pad << ", ceil_mode "
                           << ceil_mode << ", input " << g.height << "x" << g.width);
              CheckAgainstReference(g, 3, &rng);
            }
}

TEST_CASE("pooling: two threads give one thread's results, on planes large enough to split") {
  std::mt19937 rng(11);
  struct OneThreadAgain {
    ~OneThreadAgain() { SetComputeThreads(1); }
  } again;
  SetComputeThreads(2);
  for (PoolKind kind : {PoolKind::kMax, PoolKind::kAvg})
    for (int stride : {1, 2}) {
      // At stride 1 each thread's planes are more than one of max pooling's runs (MaxPoolStride1).
      const PoolGeometry g{16, 24, 24, 3, 3, stride, 1, kind, stride == 2};
      CheckAgainstReference(g, 8, &rng);
    }
}

// Max pooling with kRelu against ReluForward then the pooling, and its kSet
// gradient against the pooling's then ReluBackward's: the same bits.
void CheckReluInput(const PoolGeometry& g, int batch, std::mt19937* rng) {
  const size_t in = static_cast<size_t>(batch) * g.channels * g.height * g.width;
  const size_t out = static_cast<size_t>(batch) * g.channels * g.out_height() * g.out_width();
  // Both signs, both zeros and infinities, few of them: windows of ties and
  // windows with nothing positive.
  const float levels[] = {-2.0f,
                          -1.0f,
                          -0.0f,
                          0.0f,
                          1.0f,
                          2.0f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity()};
  std::uniform_int_distribution<int> pick(0, 7), level(-3, 3);
  std::vector<float> x(in), dy(out);
  for (float& v : x) v = levels[pick(*rng)];
  for (float& v : dy) {
    const int l = level(*rng);
    v = l == -3 ? -0.0f : static_cast<float>(l) / 8.0f;
  }
  std::vector<float> relu(in), relu_grad(in), y_apart(out), dx_apart(in, 9.0f);
  std::vector<int32_t> argmax_apart;
  ReluForward(in, x.data(), relu.data());
  PoolForward(g, batch, relu.data(), y_apart.data(), &argmax_apart);
  PoolBackward(g, batch, relu.data(), y_apart.data(), dy.data(), argmax_apart, relu_grad.data(),
               GradWrite::kSet);
  ReluBackward(in, relu.data(), relu_grad.data(), dx_apart.data(), GradWrite::kSet);
  std::vector<float> y(out), dx(in, 9.0f);
  std::vector<int32_t> argmax;
  PoolForward(g, batch, x.data(), y.data(), &argmax, PoolInput::kRelu);
  PoolBackward(g, batch, x.data(), y.data(), dy.data(), argmax, dx.data(), GradWrite::kSet, PoolInput::kRelu);
  REQUIRE(std::memcmp(y.data(), y_apart.data(), out * sizeof(float)) == 0);
  for (size_t k = 0; k < in; ++k) {
    INFO("input " << k << ": " << x[k]);
    REQUIRE(std::memcmp(&dx[k], &dx_apart[k], sizeof(float)) == 0);
  }
}

TEST_CASE("pooling: a ReLU done in max pooling's passes gives the ReLU's and the pooling's bits") {
  std::mt19937 rng(13);
  for (int kernel = 1; kernel <= 4; ++kernel)
    for (int stride = 1; stride <= 4; ++stride)
      for (int pad = 0; pad <= kernel / 2; ++pad)
        for (bool ceil_mode : {false, true})
          for (int side : {kernel, 5, 8}) {
            const PoolGeometry g{2, side, side + 1, kernel, kernel, stride, pad, PoolKind::kMax, ceil_mode};
            INFO("kernel " << kernel << ", stride " << stride << ", pad " << pad << ", ceil_mode "
                           << ceil_mode << ", input " << g.height << "x" << g.width);
            CheckReluInput(g, 3, &rng);
          }
  struct OneThreadAgain {
    ~OneThreadAgain() { SetComputeThreads(1); }
  } again;
  SetComputeThreads(2);
  for (int kernel : {2, 3})
    CheckReluInput({16, 24, 24, kernel, kernel, 2, 0, PoolKind::kMax, kernel == 3}, 8, &rng);
}

}  // namespace
}  // namespace shoal
