#include "ops/winograd_convolution.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/env_switch.h"
#include "core/log.h"
#include "ops/blas.h"
#include "ops/gpu_ops.h"
#include "ops/parallel.h"

namespace shoal {
namespace {

// A tile's side, α = m + r − 1: 6 for kernels of 2 and 3 (F(4, 3) is Lavin &
// Gray's), 8 for 4 and 5. For 5 × 5, F(4, 5) on 8 × 8 tiles takes 64
// products for 16 outputs, 4 an output, where F(2, 5) on 6 × 6 takes 9; the
// transforms cost about the same per output, and rounding grows some (the
// tests bound it). Each tile point's products are one sgemm.
constexpr int kMaxTile = 8;
int TileFor(int kernel) { return kernel >= 4 ? 8 : 6; }
// The interpolation points, and infinity: of these, the first α − 1. For
// α = 6 the choice Lavin & Gray use for F(4, 3), whose transforms stay small
// integers and powers of two; α = 8 adds ±1/2, as NNPACK's F(6, 3) does.
constexpr double kFinitePoints[kMaxTile - 1] = {0, 1, -1, 2, -2, 0.5, -0.5};

// Channels are processed kLanes at a time (one AVX-512 register, two AVX2
// ones): the tiles' layouts round their channel counts up to a multiple.
constexpr int kLanes = 16;
int Lanes(int n) { return (n + kLanes - 1) / kLanes * kLanes; }

// The transforms, on vectors of channels: Bᵀ d B of a data tile (InputRows),
// Aᵀ M A of a tile of products (OutputRows, to m × m outputs) and G g Gᵀ of
// a filter or of an output gradient's m × m tile (FilterRows). Each is one
// rows function applied along the tile's rows and then down the columns of
// the result (Separable). The points come in pairs ±a after 0, and a pair's two rows
// share their even and odd parts: for the pair's values M₊ and M₋ at ±a,
// a polynomial's coefficient i takes aⁱ (M₊ + M₋) for even i, aⁱ (M₊ − M₋)
// for odd.

// kLanes floats, as one value: GCC's vector extension, which each clone
// below compiles to its own instructions (one zmm, two ymm or four xmm).
// Passed by reference: by value its ABI would depend on the clone.
typedef float Vec __attribute__((vector_size(kLanes * sizeof(float))));
__attribute__((always_inline)) inline void Load(Vec& v, const float* p) { std::memcpy(&v, p, sizeof v); }
__attribute__((always_inline)) inline void Store(float* p, const Vec& v) { std::memcpy(p, &v, sizeof v); }

constexpr int Pairs(int alpha) { return (alpha - 2) / 2; }
// The pair p's positive point (points 1 + 2p and 2 + 2p are ±a).
constexpr double PairPoint(int p) { return kFinitePoints[1 + 2 * p]; }
static_assert(PairPoint(0) == 1.0, "OutputRows takes the first pair's powers as 1");
constexpr double Power(double x, int i) {
  double v = 1.0;
  for (int k = 0; k < i; ++k) v *= x;
  return v;
}
// Π over the other finite points l of (p_j − p_l); 1 for infinity (j = α − 1).
constexpr double Denominator(int j, int alpha) {
  double d = 1.0;
  for (int l = 0; l < alpha - 1 && j < alpha - 1; ++l)
    if (l != j) d *= kFinitePoints[j] - kFinitePoints[l];
  return d;
}

// Aᵀ: out[i] = Σ over the finite points p of pⁱ · in[p], plus infinity's
// in[α − 1] for the last output: R outputs of a tile's side.
template <int T, int R>
__attribute__((always_inline)) inline void OutputRows(const Vec (&in)[T], Vec (&out)[R]) {
  constexpr int kPairs = Pairs(T);
  Vec even[kPairs], odd[kPairs];
  for (int p = 0; p < kPairs; ++p) {
    even[p] = in[1 + 2 * p] + in[2 + 2 * p];
    odd[p] = in[1 + 2 * p] - in[2 + 2 * p];
  }
  for (int i = 0; i < R; ++i) {
    Vec sum = i % 2 ? odd[0] : even[0];  // the first pair is ±1
    if (i == 0) sum += in[0];
    for (int p = 1; p < kPairs; ++p)
      sum += static_cast<float>(Power(PairPoint(p), i)) * (i % 2 ? odd[p] : even[p]);
    if (i == R - 1) sum += in[T - 1];
    out[i] = sum;
  }
}

// G: a filter of C taps evaluated at the points, divided by the point's
// Denominator (so that Bᵀ has small entries): out[p] = Σᵢ pⁱ g[i] / D(p);
// infinity takes the last tap.
template <int T, int C>
__attribute__((always_inline)) inline void FilterRows(const Vec (&g)[C], Vec (&out)[T]) {
  out[0] = static_cast<float>(1.0 / Denominator(0, T)) * g[0];
  for (int p = 0; p < Pairs(T); ++p) {
    const double a = PairPoint(p);
    Vec even = g[0], odd = static_cast<float>(a) * g[1];
    for (int i = 2; i < C; ++i) {
      if (i % 2)
        odd += static_cast<float>(Power(a, i)) * g[i];
      else
        even += static_cast<float>(Power(a, i)) * g[i];
    }
    out[1 + 2 * p] = static_cast<float>(1.0 / Denominator(1 + 2 * p, T)) * (even + odd);
    out[2 + 2 * p] = static_cast<float>(1.0 / Denominator(2 + 2 * p, T)) * (even - odd);
  }
  out[T - 1] = g[C - 1];
}

// Bᵀ: Bᵀ's row for point p holds the coefficients of M(x) / (x − p),
// M(x) = Π over the finite points (x − pₗ), and infinity's those of M(x)
// itself; with M(x) = (x² − a²) R(x), ±a's rows are x R(x) ± a R(x).
//
// α = 6, points 0, ±1, ±2 (the matrix Lavin & Gray give for F(4, 3)):
// 13 operations instead of 22.
__attribute__((always_inline)) inline void InputRows6(const Vec (&d)[6], Vec (&o)[6]) {
  const Vec a = d[4] - 4.0f * d[2], b = d[3] - 4.0f * d[1], c = d[4] - d[2], e = 2.0f * (d[3] - d[1]);
  o[0] = 4.0f * d[0] - 5.0f * d[2] + d[4];
  o[1] = a + b;
  o[2] = a - b;
  o[3] = c + e;
  o[4] = c - e;
  o[5] = 4.0f * d[1] - 5.0f * d[3] + d[5];
}

// α = 8, points 0, ±1, ±2, ±1/2: M(x) = x⁷ − 21/4 x⁵ + 21/4 x³ − x.
__attribute__((always_inline)) inline void InputRows8(const Vec (&d)[8], Vec (&o)[8]) {
  o[0] = d[6] - d[0] + 5.25f * (d[2] - d[4]);
  o[7] = d[7] - d[1] + 5.25f * (d[3] - d[5]);
  // ±1: R = x⁵ − 17/4 x³ + x
  Vec even = d[2] + d[6] - 4.25f * d[4], odd = d[1] + d[5] - 4.25f * d[3];
  o[1] = even + odd;
  o[2] = even - odd;
  // ±2: R = x⁵ − 5/4 x³ + 1/4 x
  even = 0.25f * d[2] - 1.25f * d[4] + d[6];
  odd = 0.5f * d[1] - 2.5f * d[3] + 2.0f * d[5];  // already times 2
  o[3] = even + odd;
  o[4] = even - odd;
  // ±1/2: R = x⁵ − 5 x³ + 4 x
  even = 4.0f * d[2] - 5.0f * d[4] + d[6];
  odd = 2.0f * d[1] - 2.5f * d[3] + 0.5f * d[5];  // already times 1/2
  o[5] = even + odd;
  o[6] = even - odd;
}

// out[a·R + b] = Rows applied to the rows of the C × C tile, then to the
// columns of the result, on vectors of n floats (a multiple of kLanes): in[i][j]
// at in + i·in_row + j·in_col, out[ξ] at out + ξ·out_step.
template <int C, int R, void (*Rows)(const Vec (&)[C], Vec (&)[R])>
__attribute__((always_inline)) inline void Separable(const float* in, size_t in_row, size_t in_col,
                                                     float* out, size_t out_step, int n) {
  for (int c0 = 0; c0 < n; c0 += kLanes) {
    Vec tmp[R][C];  // tmp[b][i]: row i of the tile through Rows, value b
    for (int i = 0; i < C; ++i) {
      Vec d[C], o[R];
      for (int j = 0; j < C; ++j) Load(d[j], in + i * in_row + j * in_col + c0);
      Rows(d, o);
      for (int b = 0; b < R; ++b) tmp[b][i] = o[b];
    }
    for (int b = 0; b < R; ++b) {
      Vec o[R];
      Rows(tmp[b], o);
      for (int a = 0; a < R; ++a) Store(out + (a * R + b) * out_step + c0, o[a]);
    }
  }
}

// Which transform a Winograd instance applies: Aᵀ from a tile of α × α
// products to size × size outputs, or G from a size × size filter to α × α.
struct Transformation {
  bool output;
  int alpha, size;
};
Transformation OutputTransform(int m, int alpha) { return {true, alpha, m}; }
Transformation FilterTransform(int r, int alpha) { return {false, alpha, r}; }

// Bᵀ d B of one data tile of α × α.
__attribute__((target_clones("avx512f", "avx2", "default"))) void InputTransform(int alpha, const float* in,
                                                                                 size_t in_row, size_t in_col,
                                                                                 float* out, size_t out_step,
                                                                                 int n) {
  if (alpha == 8) return Separable<8, 8, InputRows8>(in, in_row, in_col, out, out_step, n);
  Separable<6, 6, InputRows6>(in, in_row, in_col, out, out_step, n);
}

// Aᵀ M A or G g Gᵀ for the shapes there are: sizes 2 to 5 where α = 6, 4
// and 5 where α = 8. Compiled for AVX-512 and AVX2 as well, chosen at load by
// the CPU (the build targets plain x86-64).
__attribute__((target_clones("avx512f", "avx2", "default"))) void Transform(const Transformation& how,
                                                                            const float* in, size_t in_row,
                                                                            size_t in_col, float* out,
                                                                            size_t out_step, int n) {
  switch ((how.output ? 100 : 0) + how.alpha * 10 + how.size) {
#define SHOAL_SHAPES(T, S)                                                          \
  case 100 + T * 10 + S:                                                            \
    return Separable<T, S, OutputRows<T, S>>(in, in_row, in_col, out, out_step, n); \
  case T * 10 + S:                                                                  \
    return Separable<S, T, FilterRows<T, S>>(in, in_row, in_col, out, out_step, n);
    SHOAL_SHAPES(6, 2)
    SHOAL_SHAPES(6, 3) SHOAL_SHAPES(6, 4) SHOAL_SHAPES(6, 5) SHOAL_SHAPES(8, 4) SHOAL_SHAPES(8, 5)
#undef SHOAL_SHAPES
  }
  Fatal("Winograd has no transform of " + std::to_string(how.size) + " on tiles of " +
        std::to_string(how.alpha));
}

// Products at one point are batched over up to kBudget floats of
// transformed tiles (inputs and products together), a power-of-two number
// of tile rows: small enough to stay in cache between the transforms and the
// sgemm, and a record's arithmetic does not depend on where a batch is split
// whenever the split falls on a multiple of the group (as in im2col).
constexpr size_t kBudget = 1 << 18;

// A stride-1 correlation, y[K, Ho, Wo] = x[C, H, W] ⋆ w[K, C, r, r], as
// tiles: th × tw tiles of m × m outputs over the input padded into an
// [hp, wp, C] image (channels innermost, so the transforms run on vectors
// of channels; C and K rounded up to lanes, the extra channels zero or
// ignored).
struct Tiling {
  int in_channels, height, width, out_channels, kernel, pad;
  int alpha, points;  // the tile's side, and its points (products per tile)
  int in_lanes, out_lanes, m, out_height, out_width, th, tw, hp, wp;
  int rows_per_group;  // tile rows per sgemm batch

  Tiling(int c, int h, int w, int k, int r, int p)
      : in_channels(c), height(h), width(w), out_channels(k), kernel(r), pad(p) {
    alpha = TileFor(r);
    points = alpha * alpha;
    in_lanes = Lanes(c);
    out_lanes = Lanes(k);
    m = alpha - r + 1;
    out_height = h + 2 * p - r + 1;
    out_width = w + 2 * p - r + 1;
    th = (out_height + m - 1) / m;
    tw = (out_width + m - 1) / m;
    hp = (th - 1) * m + alpha;
    wp = (tw - 1) * m + alpha;
    const size_t per_row = static_cast<size_t>(points) * tw * (in_lanes + out_lanes);
    size_t rows = 1;
    while (rows * 2 * per_row <= kBudget) rows *= 2;
    rows_per_group = static_cast<int>(rows);
  }
  size_t padded_size() const { return static_cast<size_t>(hp) * wp * in_lanes; }
  // Floats from one point's block of `count` tile rows to the next point's:
  // a cache line more than the block, so that a tile's α² values, a block
  // apart, do not all fall in one cache set, as blocks of a power of two
  // kilobytes would.
  size_t point_stride(int count, int lanes) const { return static_cast<size_t>(count) * tw * lanes + kLanes; }
  // Floats of transformed inputs and of products for one group.
  size_t inputs_size() const { return points * point_stride(rows_per_group, in_lanes); }
  size_t products_size() const { return points * point_stride(rows_per_group, out_lanes); }
};

// Copies image x [C, H, W] into the padded [hp, wp, lanes] image, whose
// border and extra lanes are zero already (only the interior is written).
void PadTransposed(const Tiling& t, const float* x, float* padded) {
  const int lanes = t.in_lanes;
  for (int c = 0; c < t.in_channels; ++c)
    for (int y = 0; y < t.height; ++y) {
      const float* __restrict src = x + (static_cast<size_t>(c) * t.height + y) * t.width;
      float* __restrict dst = padded + (static_cast<size_t>(y + t.pad) * t.wp + t.pad) * lanes + c;
      for (int i = 0; i < t.width; ++i) dst[static_cast<size_t>(i) * lanes] = src[i];
    }
}

// The tile rows [first, first + count) of the batch, row u being image u / th's
// tile row u % th: each tile's Bᵀ d B into v [points][count·tw][lanes].
// `padded` holds image `*padded_image` (−1: none yet) and is refilled when
// another image's rows come.
void TransformInputs(const Tiling& t, const float* x, int first, int count, float* padded, int* padded_image,
                     float* v) {
  const size_t in_size = static_cast<size_t>(t.in_channels) * t.height * t.width;
  const size_t step = t.point_stride(count, t.in_lanes);
  for (int u = 0; u < count; ++u) {
    const int image = (first + u) / t.th, row = (first + u) % t.th;
    if (image != *padded_image) {
      PadTransposed(t, x + image * in_size, padded);
      *padded_image = image;
    }
    for (int col = 0; col < t.tw; ++col)
      InputTransform(t.alpha, padded + (static_cast<size_t>(row) * t.m * t.wp + col * t.m) * t.in_lanes,
                     static_cast<size_t>(t.wp) * t.in_lanes, t.in_lanes,
                     v + (static_cast<size_t>(u) * t.tw + col) * t.in_lanes, step, t.in_lanes);
  }
}

// Each tile's Aᵀ M A from the products p [points][count·tw][lanes], written
// into y [K, Ho, Wo] of its image (plus bias[k] where bias is not null;
// added to what y holds when `add`).
void WriteOutputs(const Tiling& t, const Transformation& at, const float* p, int first, int count,
                  const float* bias, bool add, float* y, float* out) {
  const int lanes = t.out_lanes, m = t.m;
  const size_t plane = static_cast<size_t>(t.out_height) * t.out_width;
  const size_t step = t.point_stride(count, lanes);
  for (int u = 0; u < count; ++u) {
    const int image = (first + u) / t.th, row = (first + u) % t.th;
    float* image_y = y + static_cast<size_t>(image) * t.out_channels * plane;
    for (int col = 0; col < t.tw; ++col) {
      Transform(at, p + (static_cast<size_t>(u) * t.tw + col) * lanes, t.alpha * step, step, out, lanes,
                lanes);
      for (int i = 0; i < m && row * m + i < t.out_height; ++i)
        for (int j = 0; j < m && col * m + j < t.out_width; ++j) {
          const float* __restrict o = out + (i * m + j) * lanes;
          float* __restrict dst = image_y + static_cast<size_t>(row * m + i) * t.out_width + col * m + j;
          for (int k = 0; k < t.out_channels; ++k) {
            const float value = bias ? o[k] + bias[k] : o[k];
            dst[k * plane] = add ? dst[k * plane] + value : value;
          }
        }
    }
  }
}

// y = x ⋆ w for images [begin, end), u being w's transform
// [points][C][out lanes]. `work` holds CorrelateWork(t) floats.
size_t CorrelateWork(const Tiling& t) {
  return t.padded_size() + t.inputs_size() + t.products_size() + static_cast<size_t>(t.m) * t.m * t.out_lanes;
}
void CorrelateImages(const Tiling& t, const Transformation& at, int begin, int end, const float* x,
                     const float* u, const float* bias, bool add, float* y, float* work) {
  float* padded = work;
  float* v = padded + t.padded_size();
  float* p = v + t.inputs_size();
  float* out = p + t.products_size();
  std::fill(padded, padded + t.padded_size(), 0.0f);
  int padded_image = -1;
  const int last = end * t.th;
  for (int first = begin * t.th; first < last; first += t.rows_per_group) {
    const int count = std::min(t.rows_per_group, last - first);
    const int tiles = count * t.tw;
    TransformInputs(t, x, first, count, padded, &padded_image, v);
    const size_t vs = t.point_stride(count, t.in_lanes), ps = t.point_stride(count, t.out_lanes);
    for (int point = 0; point < t.points; ++point)
      Sgemm(false, false, tiles, t.out_channels, t.in_channels, 1.0f, v + point * vs, t.in_lanes,
            u + static_cast<size_t>(point) * t.in_channels * t.out_lanes, t.out_lanes, 0.0f, p + point * ps,
            t.out_lanes);
    WriteOutputs(t, at, p, first, count, bias, add, y, out);
  }
}

// Rounds a task's share of floats up to a cache line's multiple.
size_t Lines(size_t floats) { return (floats + 15) / 16 * 16; }

class Winograd final : public FastConvolution {
 public:
  explicit Winograd(const ConvGeometry& g)
      : g_(g),
        r_(g.kernel),
        m_(TileFor(g.kernel) - g.kernel + 1),
        forward_(g.channels, g.height, g.width, g.filters, g.kernel, g.pad),
        // The data gradient: dy [K, Ho, Wo] correlated with the flipped
        // kernel, padded by r − 1 − pad, gives dx [C, H, W].
        data_(g.filters, g.out_height(), g.out_width(), g.channels, g.kernel, g.kernel - 1 - g.pad),
        at_m_(OutputTransform(m_, forward_.alpha)),
        at_r_(OutputTransform(r_, forward_.alpha)),
        g_r_(FilterTransform(r_, forward_.alpha)),
        g_m_(FilterTransform(m_, forward_.alpha)) {}

  bool Forward(int batch, const float* x, const float* w, const float* b, float* y) override {
    if (CurrentGpuOps()) return false;
    if (batch <= 0) return true;
    TransformFilters(w, /*flip=*/false);
    Correlate(forward_, batch, x, b, /*add=*/false, y);
    return true;
  }

  void Backward(int batch, const float* x, const float* w, const float* dy, float* dx, GradWrite dx_write,
                float* dw, float* db) override {
    WeightGradient(batch, x, dy, dw, db);
    if (!dx || batch <= 0) return;
    TransformFilters(w, /*flip=*/true);
    Correlate(data_, batch, dy, nullptr, dx_write == GradWrite::kAdd, dx);
  }

 private:
  // u_ [points][in][out lanes] = G w[k][c] Gᵀ for every filter k and
  // channel c: of the kernel as it is (in = C, out = K), or flipped with C
  // and K swapped (the data gradient's: in = K, out = C).
  void TransformFilters(const float* w, bool flip) {
    const int r = r_, c_count = g_.channels, k_count = g_.filters;
    const int in = flip ? k_count : c_count, out = flip ? c_count : k_count, lanes = Lanes(out);
    const size_t plane = static_cast<size_t>(in) * lanes;
    // Laid out [r][r][in][lanes], so the transform runs on vectors of out.
    // Both loops write disjoint values: the tasks split them without changing any.
    filters_.assign(static_cast<size_t>(r) * r * plane, 0.0f);
    ParallelFor(k_count, [&](int, int begin, int end) {
      for (int k = begin; k < end; ++k)
        for (int c = 0; c < c_count; ++c)
          for (int i = 0; i < r; ++i)
            for (int j = 0; j < r; ++j) {
              const float value = w[((static_cast<size_t>(k) * c_count + c) * r + i) * r + j];
              const int a = flip ? r - 1 - i : i, b = flip ? r - 1 - j : j;
              const size_t at = (a * r + b) * plane;
              filters_[at + (flip ? static_cast<size_t>(k) * lanes + c
                                  : static_cast<size_t>(c) * lanes + k)] = value;
            }
    });
    u_.resize(forward_.points * plane);
    ParallelFor(in, [&](int, int begin, int end) {
      for (int c = begin; c < end; ++c)
        Transform(g_r_, filters_.data() + static_cast<size_t>(c) * lanes, r * plane, plane,
                  u_.data() + static_cast<size_t>(c) * lanes, plane, lanes);
    });
  }

  // Each task takes a contiguous share of the images with its own working memory.
  void Correlate(const Tiling& t, int batch, const float* x, const float* bias, bool add, float* y) {
    const int tasks = ParallelTasks(batch);
    const size_t work = Lines(CorrelateWork(t));
    scratch_.resize(work * tasks);
    float* base = scratch_.data();
    ParallelFor(batch, [&](int task, int begin, int end) {
      CorrelateImages(t, at_m_, begin, end, x, u_.data(), bias, add, y, base + task * work);
    });
  }

  // dw[k][c] = Aᵣᵀ (Σ over tiles of (Bᵀ d B)ₜ[c] ⊙ (Gₘ dyₜ Gₘᵀ)[k]) Aᵣ: F(r, m)
  // with each tile's m × m output gradient as the filter; db sums dy. Each
  // task sums its images' tiles; the tasks' sums are added in task order.
  void WeightGradient(int batch, const float* x, const float* dy, float* dw, float* db) {
    const Tiling& t = forward_;
    const int c_count = g_.channels, k_count = g_.filters, lanes = t.out_lanes, r = r_;
    if (batch <= 0) {
      std::fill(dw, dw + static_cast<size_t>(k_count) * c_count * r * r, 0.0f);
      std::fill(db, db + k_count, 0.0f);
      return;
    }
    const size_t sums = t.points * static_cast<size_t>(c_count) * lanes + lanes;  // and the bias's
    const size_t dy_padded = static_cast<size_t>(t.th) * m_ * t.tw * m_ * lanes;
    const size_t work =
        Lines(sums) + Lines(t.padded_size() + dy_padded + t.inputs_size() + t.products_size());
    const int tasks = ParallelTasks(batch);
    scratch_.resize(work * tasks);
    float* base = scratch_.data();
    ParallelFor(batch, [&](int task, int begin, int end) {
      float* s = base + task * work;
      float* padded = s + Lines(sums);
      float* dy_tiles = padded + t.padded_size();
      float* v = dy_tiles + dy_padded;
      float* d = v + t.inputs_size();
      std::fill(s, s + sums, 0.0f);
      std::fill(padded, padded + t.padded_size() + dy_padded, 0.0f);
      WeightGradientImages(begin, end, x, dy, s, s + sums - lanes, padded, dy_tiles, v, d);
    });
    // Each value adds the tasks' sums in task order, however the values are split.
    float* total = base;
    if (tasks > 1)
      ParallelFor(static_cast<int>((sums + kLanes - 1) / kLanes), [&](int, int begin, int end) {
        const size_t first = static_cast<size_t>(begin) * kLanes, last = std::min(sums, size_t{kLanes} * end);
        for (int task = 1; task < tasks; ++task) {
          const float* other = base + task * work;
          for (size_t i = first; i < last; ++i) total[i] += other[i];
        }
      });
    std::copy(total + sums - lanes, total + sums - lanes + k_count, db);
    const size_t plane = static_cast<size_t>(c_count) * lanes, out = static_cast<size_t>(r) * r * lanes;
    out_.resize(out * ParallelTasks(c_count));
    ParallelFor(c_count, [&](int task, int begin, int end) {
      float* o = out_.data() + task * out;
      for (int c = begin; c < end; ++c) {
        Transform(at_r_, total + static_cast<size_t>(c) * lanes, forward_.alpha * plane, plane, o, lanes,
                  lanes);
        for (int k = 0; k < k_count; ++k)
          for (int i = 0; i < r * r; ++i)
            dw[(static_cast<size_t>(k) * c_count + c) * r * r + i] = o[i * lanes + k];
      }
    });
  }

  // One task's images [begin, end): adds into s [points][C][lanes] and
  // bias_sum [lanes].
  void WeightGradientImages(int begin, int end, const float* x, const float* dy, float* s, float* bias_sum,
                            float* padded, float* dy_tiles, float* v, float* d) const {
    const Tiling& t = forward_;
    const int c_count = g_.channels, k_count = g_.filters, lanes = t.out_lanes, m = m_;
    const size_t plane = static_cast<size_t>(t.out_height) * t.out_width;
    const int dy_width = t.tw * m;  // dy_tiles: [th·m, tw·m, lanes], zero beyond Ho × Wo
    int padded_image = -1, dy_image = -1;
    const int last = end * t.th;
    for (int first = begin * t.th; first < last; first += t.rows_per_group) {
      const int count = std::min(t.rows_per_group, last - first);
      const int tiles = count * t.tw;
      TransformInputs(t, x, first, count, padded, &padded_image, v);
      const size_t step = t.point_stride(count, lanes);
      for (int u = 0; u < count; ++u) {
        const int image = (first + u) / t.th, row = (first + u) % t.th;
        if (image != dy_image) {
          const float* src = dy + static_cast<size_t>(image) * k_count * plane;
          for (int k = 0; k < k_count; ++k) {
            float sum = 0.0f;
            for (int y = 0; y < t.out_height; ++y)
              for (int i = 0; i < t.out_width; ++i) {
                const float value = src[k * plane + static_cast<size_t>(y) * t.out_width + i];
                dy_tiles[(static_cast<size_t>(y) * dy_width + i) * lanes + k] = value;
                sum += value;
              }
            bias_sum[k] += sum;
          }
          dy_image = image;
        }
        for (int col = 0; col < t.tw; ++col)
          Transform(g_m_, dy_tiles + (static_cast<size_t>(row) * m * dy_width + col * m) * lanes,
                    static_cast<size_t>(dy_width) * lanes, lanes,
                    d + (static_cast<size_t>(u) * t.tw + col) * lanes, step, lanes);
      }
      const size_t vs = t.point_stride(count, t.in_lanes);
      for (int point = 0; point < t.points; ++point)
        Sgemm(true, false, c_count, k_count, tiles, 1.0f, v + point * vs, t.in_lanes, d + point * step, lanes,
              1.0f, s + static_cast<size_t>(point) * c_count * lanes, lanes);
    }
  }

  ConvGeometry g_;
  int r_, m_;
  Tiling forward_, data_;
  Transformation at_m_, at_r_, g_r_, g_m_;
  std::vector<float> u_, filters_, out_, scratch_;
};

// The fewest channels in and out Winograd pays at. The transforms' cost
// grows with the channels where the products' grows with their product, and
// 6 × 6 tiles save fewer products than 8 × 8. build/convolution_speed
// measures a geometry against oneDNN's direct kernel.
int MinChannels(int kernel) { return TileFor(kernel) == 8 ? 16 : 32; }

// The fewest tiles a group of products spans. The weight gradient's sgemms
// sum over a group's tiles, so fewer make them thin. They also read and
// write every product of C × K channels, and the filters' transforms cost as
// much again each step. Small images with many channels (AlexNet's and
// GoogLeNet's last stages) give such groups, and there oneDNN's direct
// kernel is faster (build/convolution_speed).
constexpr int kMinGroupTiles = 16;

}  // namespace

bool WinogradEnabled() {
  static const bool enabled = EnvSwitchOn("SHOAL_WINOGRAD");
  return enabled;
}

bool WinogradTakes(const ConvGeometry& g) {
  if (!WinogradEnabled() || g.stride != 1 || g.kernel < 2 || g.kernel > 5 || g.pad >= g.kernel ||
      g.channels < MinChannels(g.kernel) || g.filters < MinChannels(g.kernel))
    return false;
  const Tiling t(g.channels, g.height, g.width, g.filters, g.kernel, g.pad);
  return t.rows_per_group * t.tw >= kMinGroupTiles;
}

std::unique_ptr<FastConvolution> NewWinogradConvolution(const ConvGeometry& g) {
  if (!WinogradTakes(g)) return nullptr;
  return std::make_unique<Winograd>(g);
}

}  // namespace shoal
