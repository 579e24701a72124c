#include "ops/winograd_convolution.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/env_switch.h"
#include "ops/blas.h"
#include "ops/gpu_ops.h"
#include "ops/parallel.h"

namespace shoal {
namespace {

constexpr int kTile = 6;               // α = m + r − 1, the tile's side
constexpr int kPoints = kTile * kTile;  // products per tile, one sgemm each
// The interpolation points, and infinity: the choice Lavin & Gray use for
// F(4, 3), whose transforms stay small integers and powers of two.
constexpr double kFinitePoints[kTile - 1] = {0, 1, -1, 2, -2};

// Channels are processed kLanes at a time (one AVX-512 register, two AVX2
// ones): the tiles' layouts round their channel counts up to a multiple.
constexpr int kLanes = 16;
int Lanes(int n) { return (n + kLanes - 1) / kLanes * kLanes; }

// A transform matrix of at most kTile × kTile, row-major.
struct Matrix {
  int rows = 0, cols = 0;
  float v[kTile * kTile] = {};
};

// Row j of the [kTile, n] matrix that evaluates a polynomial of n
// coefficients at point j; infinity's row takes its leading coefficient.
double Evaluate(int j, int i, int n) {
  if (j < kTile - 1) return std::pow(kFinitePoints[j], i);
  return i == n - 1 ? 1.0 : 0.0;
}

// Π over the other finite points l of (p_j − p_l); 1 for infinity.
double Denominator(int j) {
  double d = 1.0;
  for (int l = 0; l < kTile - 1 && j < kTile - 1; ++l)
    if (l != j) d *= kFinitePoints[j] - kFinitePoints[l];
  return d;
}

// Aᵀ, [m, kTile]: from the products at the points to m outputs.
Matrix OutputTransform(int m) {
  Matrix a;
  a.rows = m;
  a.cols = kTile;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < kTile; ++j) a.v[i * kTile + j] = static_cast<float>(Evaluate(j, i, m));
  return a;
}

// G, [kTile, r]: a filter of r taps evaluated at the points, with the
// interpolation's denominators folded in, so that the data's transform Bᵀ
// (InputTransform below) has small integer entries.
Matrix FilterTransform(int r) {
  Matrix g;
  g.rows = kTile;
  g.cols = r;
  for (int j = 0; j < kTile; ++j)
    for (int i = 0; i < r; ++i) g.v[j * r + i] = static_cast<float>(Evaluate(j, i, r) / Denominator(j));
  return g;
}

// kLanes floats, as one value: GCC's vector extension, which each clone
// below compiles to its own instructions (one zmm, two ymm or four xmm).
// Passed by reference: by value its ABI would depend on the clone.
typedef float Vec __attribute__((vector_size(kLanes * sizeof(float))));
__attribute__((always_inline)) inline void Load(Vec& v, const float* p) { std::memcpy(&v, p, sizeof v); }
__attribute__((always_inline)) inline void Store(float* p, const Vec& v) { std::memcpy(p, &v, sizeof v); }

// out[a·R + b] = Σ over i, j of M[a][i] · in[i][j] · M[b][j] for M of R × C,
// on vectors of n floats (a multiple of kLanes): in[i][j] at in + i·in_row +
// j·in_col, out[ξ] at out + ξ·out_step.
template <int R, int C>
__attribute__((always_inline)) inline void Transform2D(const float* m, const float* in, size_t in_row,
                                                       size_t in_col, float* out, size_t out_step, int n) {
  for (int c0 = 0; c0 < n; c0 += kLanes) {
    Vec tmp[C][R];  // tmp[i][b] = Σ_j M[b][j] · in[i][j]
    for (int i = 0; i < C; ++i) {
      Vec row[C];
      for (int j = 0; j < C; ++j) Load(row[j], in + i * in_row + j * in_col + c0);
      for (int b = 0; b < R; ++b) {
        Vec sum = m[b * C] * row[0];
        for (int j = 1; j < C; ++j) sum += m[b * C + j] * row[j];
        tmp[i][b] = sum;
      }
    }
    for (int a = 0; a < R; ++a)
      for (int b = 0; b < R; ++b) {
        Vec sum = m[a * C] * tmp[0][b];
        for (int i = 1; i < C; ++i) sum += m[a * C + i] * tmp[i][b];
        Store(out + (a * R + b) * out_step + c0, sum);
      }
  }
}

// Transform2D for the shapes there are: Aᵀ of F(m, r) (m × kTile) and G
// (kTile × r), m and r from 2 to 5. Compiled for AVX-512 and AVX2 as well,
// chosen at load by the CPU (the build targets plain x86-64).
__attribute__((target_clones("avx512f", "avx2", "default"))) void Transform(
    const Matrix& m, const float* in, size_t in_row, size_t in_col, float* out, size_t out_step, int n) {
  const float* v = m.v;
  switch (m.rows == kTile ? m.cols : 10 + m.rows) {
    case 2: return Transform2D<kTile, 2>(v, in, in_row, in_col, out, out_step, n);
    case 3: return Transform2D<kTile, 3>(v, in, in_row, in_col, out, out_step, n);
    case 4: return Transform2D<kTile, 4>(v, in, in_row, in_col, out, out_step, n);
    case 5: return Transform2D<kTile, 5>(v, in, in_row, in_col, out, out_step, n);
    case 12: return Transform2D<2, kTile>(v, in, in_row, in_col, out, out_step, n);
    case 13: return Transform2D<3, kTile>(v, in, in_row, in_col, out, out_step, n);
    case 14: return Transform2D<4, kTile>(v, in, in_row, in_col, out, out_step, n);
    default: return Transform2D<5, kTile>(v, in, in_row, in_col, out, out_step, n);
  }
}

// o[b] = Σ_j Bᵀ[b][j] · d[j]. Bᵀ for the points 0, ±1, ±2 and infinity (the
// matrix Lavin & Gray give for F(4, 3); it depends on the points only), its
// rows sharing subexpressions: 13 operations instead of 22.
__attribute__((always_inline)) inline void InputRows(const Vec (&d)[kTile], Vec (&o)[kTile]) {
  const Vec a = d[4] - 4.0f * d[2], b = d[3] - 4.0f * d[1], c = d[4] - d[2], e = 2.0f * (d[3] - d[1]);
  o[0] = 4.0f * d[0] - 5.0f * d[2] + d[4];
  o[1] = a + b;
  o[2] = a - b;
  o[3] = c + e;
  o[4] = c - e;
  o[5] = 4.0f * d[1] - 5.0f * d[3] + d[5];
}

// Bᵀ d B for one 6 × 6 tile of vectors of n floats (a multiple of kLanes):
// d[i][j] at in + i·in_row + j·in_col, the result's point ξ at out + ξ·out_step.
__attribute__((target_clones("avx512f", "avx2", "default"))) void InputTransform(
    const float* in, size_t in_row, size_t in_col, float* out, size_t out_step, int n) {
  for (int c0 = 0; c0 < n; c0 += kLanes) {
    Vec tmp[kTile][kTile];  // tmp[b][i] = Σ_j Bᵀ[b][j] · d[i][j]
    for (int i = 0; i < kTile; ++i) {
      Vec d[kTile], o[kTile];
      for (int j = 0; j < kTile; ++j) Load(d[j], in + i * in_row + j * in_col + c0);
      InputRows(d, o);
      for (int b = 0; b < kTile; ++b) tmp[b][i] = o[b];
    }
    for (int b = 0; b < kTile; ++b) {
      Vec o[kTile];
      InputRows(tmp[b], o);
      for (int a = 0; a < kTile; ++a) Store(out + (a * kTile + b) * out_step + c0, o[a]);
    }
  }
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
  int in_lanes, out_lanes, m, out_height, out_width, th, tw, hp, wp;
  int rows_per_group;  // tile rows per sgemm batch

  Tiling(int c, int h, int w, int k, int r, int p)
      : in_channels(c), height(h), width(w), out_channels(k), kernel(r), pad(p) {
    in_lanes = Lanes(c);
    out_lanes = Lanes(k);
    m = kTile - r + 1;
    out_height = h + 2 * p - r + 1;
    out_width = w + 2 * p - r + 1;
    th = (out_height + m - 1) / m;
    tw = (out_width + m - 1) / m;
    hp = (th - 1) * m + kTile;
    wp = (tw - 1) * m + kTile;
    const size_t per_row = static_cast<size_t>(kPoints) * tw * (in_lanes + out_lanes);
    size_t rows = 1;
    while (rows * 2 * per_row <= kBudget) rows *= 2;
    rows_per_group = static_cast<int>(rows);
  }
  size_t padded_size() const { return static_cast<size_t>(hp) * wp * in_lanes; }
  size_t group_tiles() const { return static_cast<size_t>(rows_per_group) * tw; }
  // Floats of transformed inputs and of products for one group.
  size_t inputs_size() const { return kPoints * group_tiles() * in_lanes; }
  size_t products_size() const { return kPoints * group_tiles() * out_lanes; }
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
// tile row u % th: each tile's Bᵀ d B into v [kPoints][count·tw][lanes].
// `padded` holds image `*padded_image` (−1: none yet) and is refilled when
// another image's rows come.
void TransformInputs(const Tiling& t, const float* x, int first, int count, float* padded, int* padded_image,
                     float* v) {
  const size_t in_size = static_cast<size_t>(t.in_channels) * t.height * t.width;
  const size_t step = static_cast<size_t>(count) * t.tw * t.in_lanes;
  for (int u = 0; u < count; ++u) {
    const int image = (first + u) / t.th, row = (first + u) % t.th;
    if (image != *padded_image) {
      PadTransposed(t, x + image * in_size, padded);
      *padded_image = image;
    }
    for (int col = 0; col < t.tw; ++col)
      InputTransform(padded + (static_cast<size_t>(row) * t.m * t.wp + col * t.m) * t.in_lanes,
                     static_cast<size_t>(t.wp) * t.in_lanes, t.in_lanes,
                     v + (static_cast<size_t>(u) * t.tw + col) * t.in_lanes, step, t.in_lanes);
  }
}

// Each tile's Aᵀ M A from the products p [kPoints][count·tw][lanes], written
// into y [K, Ho, Wo] of its image (plus bias[k] where bias is not null;
// added to what y holds when `add`).
void WriteOutputs(const Tiling& t, const Matrix& at, const float* p, int first, int count, const float* bias,
                  bool add, float* y, float* out) {
  const int lanes = t.out_lanes, m = t.m;
  const size_t plane = static_cast<size_t>(t.out_height) * t.out_width;
  const size_t step = static_cast<size_t>(count) * t.tw * lanes;
  for (int u = 0; u < count; ++u) {
    const int image = (first + u) / t.th, row = (first + u) % t.th;
    float* image_y = y + static_cast<size_t>(image) * t.out_channels * plane;
    for (int col = 0; col < t.tw; ++col) {
      Transform(at, p + (static_cast<size_t>(u) * t.tw + col) * lanes, kTile * step, step, out, lanes, lanes);
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
// [kPoints][C][out lanes]. `work` holds CorrelateWork(t) floats.
size_t CorrelateWork(const Tiling& t) {
  return t.padded_size() + t.inputs_size() + t.products_size() + static_cast<size_t>(t.m) * t.m * t.out_lanes;
}
void CorrelateImages(const Tiling& t, const Matrix& at, int begin, int end, const float* x, const float* u,
                     const float* bias, bool add, float* y, float* work) {
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
    const size_t vs = static_cast<size_t>(tiles) * t.in_lanes, ps = static_cast<size_t>(tiles) * t.out_lanes;
    for (int point = 0; point < kPoints; ++point)
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
        m_(kTile - g.kernel + 1),
        forward_(g.channels, g.height, g.width, g.filters, g.kernel, g.pad),
        // The data gradient: dy [K, Ho, Wo] correlated with the flipped
        // kernel, padded by r − 1 − pad, gives dx [C, H, W].
        data_(g.filters, g.out_height(), g.out_width(), g.channels, g.kernel, g.kernel - 1 - g.pad),
        at_m_(OutputTransform(m_)),
        at_r_(OutputTransform(r_)),
        g_r_(FilterTransform(r_)),
        g_m_(FilterTransform(m_)) {}

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
  // u_ [kPoints][in][out lanes] = G w[k][c] Gᵀ for every filter k and
  // channel c: of the kernel as it is (in = C, out = K), or flipped with C
  // and K swapped (the data gradient's: in = K, out = C).
  void TransformFilters(const float* w, bool flip) {
    const int r = r_, c_count = g_.channels, k_count = g_.filters;
    const int in = flip ? k_count : c_count, out = flip ? c_count : k_count, lanes = Lanes(out);
    const size_t plane = static_cast<size_t>(in) * lanes;
    // Laid out [r][r][in][lanes], so the transform runs on vectors of out.
    filters_.assign(static_cast<size_t>(r) * r * plane, 0.0f);
    for (int k = 0; k < k_count; ++k)
      for (int c = 0; c < c_count; ++c)
        for (int i = 0; i < r; ++i)
          for (int j = 0; j < r; ++j) {
            const float value = w[((static_cast<size_t>(k) * c_count + c) * r + i) * r + j];
            const int a = flip ? r - 1 - i : i, b = flip ? r - 1 - j : j;
            const size_t at = (a * r + b) * plane;
            filters_[at + (flip ? static_cast<size_t>(k) * lanes + c : static_cast<size_t>(c) * lanes + k)] = value;
          }
    u_.resize(kPoints * plane);
    for (int c = 0; c < in; ++c)
      Transform(g_r_, filters_.data() + static_cast<size_t>(c) * lanes, r * plane, plane,
                u_.data() + static_cast<size_t>(c) * lanes, plane, lanes);
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
    const size_t sums = kPoints * static_cast<size_t>(c_count) * lanes + lanes;  // and the bias's
    const size_t dy_padded = static_cast<size_t>(t.th) * m_ * t.tw * m_ * lanes;
    const size_t work = Lines(sums) + Lines(t.padded_size() + dy_padded + t.inputs_size() + t.products_size());
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
    float* total = base;
    for (int task = 1; task < tasks; ++task) {
      const float* other = base + task * work;
      for (size_t i = 0; i < sums; ++i) total[i] += other[i];
    }
    std::copy(total + sums - lanes, total + sums - lanes + k_count, db);
    const size_t plane = static_cast<size_t>(c_count) * lanes;
    out_.resize(static_cast<size_t>(r) * r * lanes);
    for (int c = 0; c < c_count; ++c) {
      Transform(at_r_, total + static_cast<size_t>(c) * lanes, kTile * plane, plane, out_.data(), lanes, lanes);
      for (int k = 0; k < k_count; ++k)
        for (int i = 0; i < r * r; ++i) dw[(static_cast<size_t>(k) * c_count + c) * r * r + i] = out_[i * lanes + k];
    }
  }

  // One task's images [begin, end): adds into s [kPoints][C][lanes] and
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
      const size_t step = static_cast<size_t>(tiles) * lanes;
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
                    static_cast<size_t>(dy_width) * lanes, lanes, d + (static_cast<size_t>(u) * t.tw + col) * lanes,
                    step, lanes);
      }
      const size_t vs = static_cast<size_t>(tiles) * t.in_lanes;
      for (int point = 0; point < kPoints; ++point)
        Sgemm(true, false, c_count, k_count, tiles, 1.0f, v + point * vs, t.in_lanes, d + point * step, lanes, 1.0f,
              s + static_cast<size_t>(point) * c_count * lanes, lanes);
    }
  }

  ConvGeometry g_;
  int r_, m_;
  Tiling forward_, data_;
  Matrix at_m_, at_r_, g_r_, g_m_;
  std::vector<float> u_, filters_, out_, scratch_;
};

// Fewer channels than this in or out and the transforms, whose cost grows
// with the channels where the products' grows with their product, and the
// sgemms over so few channels cost more than the products save
// (build/convolution_speed, batch 64: at 16 → 32 channels, 5 × 5 on 28 × 28,
// Winograd took 46 ms at one thread where oneDNN took 39; at 32 → 64 on
// 14 × 14, 32 against 36; at 64 → 64, 3 × 3 on 28 × 28, 67 against 113).
constexpr int kMinChannels = 32;

}  // namespace

bool WinogradTakes(const ConvGeometry& g) {
  static const bool enabled = EnvSwitchOn("SHOAL_WINOGRAD");
  return enabled && g.stride == 1 && g.kernel >= 2 && g.kernel <= 5 && g.pad < g.kernel &&
         g.channels >= kMinChannels && g.filters >= kMinChannels;
}

std::unique_ptr<FastConvolution> NewWinogradConvolution(const ConvGeometry& g) {
  if (!WinogradTakes(g)) return nullptr;
  return std::make_unique<Winograd>(g);
}

}  // namespace shoal
