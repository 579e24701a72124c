// Sgemm against a plain triple loop in double: every transpose combination,
// sub-matrices (leading dimensions wider than the rows), alpha and beta, and
// shapes from a single element to ones with odd sizes; in float32, and in
// bfloat16 against the loop over inputs rounded to bfloat16. ctest runs these
// cases once on oneDNN and once, as unit_without_onednn, with SHOAL_ONEDNN=0
// (where bfloat16 is refused).
#include "ops/blas.h"

#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "ops/onednn.h"
#include "test_util.h"

namespace shoal {
namespace {

struct Case {
  bool trans_a, trans_b;
  int m, n, k;
  float alpha, beta;
};

// op(X)[r][c] of a row-major matrix with leading dimension ld, rounded to
// bfloat16 when asked.
double At(const std::vector<float>& x, bool trans, int ld, int r, int c, bool bf16) {
  const float v = trans ? x[size_t(c) * ld + r] : x[size_t(r) * ld + c];
  return bf16 ? RoundToBf16(v) : v;
}

// Products of bfloat16 values are exact in float32: only the sums round.
void Check(const Case& t, bool bf16 = false) {
  // Leading dimensions 3 wider than needed: Sgemm must not touch the gaps.
  const int a_rows = t.trans_a ? t.k : t.m, a_cols = t.trans_a ? t.m : t.k;
  const int b_rows = t.trans_b ? t.n : t.k, b_cols = t.trans_b ? t.k : t.n;
  const int lda = a_cols + 3, ldb = b_cols + 3, ldc = t.n + 3;
  std::mt19937 rng(t.m * 131 + t.n * 17 + t.k);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> a(size_t(a_rows) * lda), b(size_t(b_rows) * ldb), c(size_t(t.m) * ldc);
  for (float& v : a) v = u(rng);
  for (float& v : b) v = u(rng);
  for (float& v : c) v = u(rng);
  const std::vector<float> c0 = c;

  Sgemm(t.trans_a, t.trans_b, t.m, t.n, t.k, t.alpha, a.data(), lda, b.data(), ldb, t.beta, c.data(), ldc);

  INFO("trans_a " << t.trans_a << " trans_b " << t.trans_b << " m " << t.m << " n " << t.n << " k " << t.k
                  << " alpha " << t.alpha << " beta " << t.beta << " oneDNN " << OneDnnEnabled() << " bf16 "
                  << bf16);
  for (int i = 0; i < t.m; ++i) {
    for (int j = 0; j < ldc; ++j) {
      const size_t at = size_t(i) * ldc + j;
      if (j >= t.n) {
        REQUIRE(c[at] == c0[at]);  // the gap between rows is untouched
        continue;
      }
      double want = 0;
      for (int p = 0; p < t.k; ++p)
        want += At(a, t.trans_a, lda, i, p, bf16) * At(b, t.trans_b, ldb, p, j, bf16);
      want = t.alpha * want + t.beta * c0[at];
      REQUIRE(std::fabs(c[at] - want) <= 1e-5 * (t.k + 1));
    }
  }
}

TEST_CASE("Sgemm matches a plain product for every transpose, sub-matrices, alpha and beta") {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (const auto& [m, n, k] :
           {std::tuple{1, 1, 1}, {7, 5, 3}, {64, 33, 129}, {3, 300, 17}, {100, 1, 50}})
        for (const auto& [alpha, beta] : {std::pair{1.0f, 0.0f}, {1.0f, 1.0f}, {-0.5f, 2.0f}})
          Check({ta, tb, m, n, k, alpha, beta});
}

TEST_CASE("Sgemm in bf16 multiplies its inputs rounded to bfloat16" * doctest::skip(!Bf16Kernels())) {
  Bf16Scope bf16;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (const auto& [m, n, k] : {std::tuple{1, 1, 1}, {7, 5, 3}, {64, 33, 129}, {3, 300, 17}})
        for (const auto& [alpha, beta] : {std::pair{1.0f, 0.0f}, {1.0f, 1.0f}, {-0.5f, 2.0f}})
          Check({ta, tb, m, n, k, alpha, beta}, /*bf16=*/true);
  // 1 + 2^-10 has no bfloat16 (8 significant bits): it rounds to 1.
  const float a = 1.0f + 1.0f / 1024, b = 1.0f;
  float c = 0;
  Sgemm(false, false, 1, 1, 1, 1.0f, &a, &b, 0.0f, &c);
  CHECK(c == 1.0f);
}

TEST_CASE("Sgemm's bf16 is refused where oneDNN has no bfloat16 kernels" * doctest::skip(Bf16Kernels())) {
  const Status refused = SetComputePrecision(Precision::kBf16);
  REQUIRE_FALSE(refused.ok());
  CHECK(Contains(refused.message(), "train.compute bf16 needs oneDNN's bfloat16 kernels"));
  CHECK(ComputePrecision() == Precision::kFp32);
  const float a = 1.0f + 1.0f / 1024, b = 1.0f;
  float c = 0;
  Sgemm(false, false, 1, 1, 1, 1.0f, &a, &b, 0.0f, &c);
  CHECK(c == a);
}

TEST_CASE("Sgemm with beta 0 ignores what C held, NaN included") {
  // A caller's output buffer may be uninitialised: beta = 0 must not read it.
  std::vector<float> a(6, 1.0f), b(6, 2.0f), c(4, std::nanf(""));
  Sgemm(false, false, 2, 2, 3, 1.0f, a.data(), b.data(), 0.0f, c.data());
  for (float v : c) CHECK(v == 6.0f);
}

}  // namespace
}  // namespace shoal
