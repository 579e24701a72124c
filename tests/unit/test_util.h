// Helpers shared by the unit tests.
#pragma once

#include <doctest/doctest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/document.h"
#include "config/fields.h"
#include "ops/blas.h"
#include "tensor/tensor.h"

namespace shoal {

// A fresh directory under /tmp, removed when the test ends.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/shoal-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

// A layer's fields written as YAML, for calling Setup directly.
struct YamlFields {
  Document doc;
  std::unique_ptr<Fields> fields;
  YamlFields(const std::string& yaml, const std::string& what) {
    if (!ParseYaml(yaml, "test.yaml", &doc).ok()) throw std::invalid_argument("test YAML: " + yaml);
    fields = std::make_unique<Fields>(doc.root, doc.origin, "", what);
  }
  const Fields& operator*() const { return *fields; }
  const Fields* operator->() const { return fields.get(); }
};

// Whether two tensors hold the same floats, bit for bit.
inline bool SameBits(const Tensor& a, const Tensor& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

inline bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// n floats uniform in [-1, 1), the same for the same seed.
inline std::vector<float> Random(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// v rounded to the nearest bfloat16, ties to even, as oneDNN rounds a float
// it computes with in bfloat16 (finite values only).
inline float RoundToBf16(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  bits = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// Products and convolutions in bfloat16 for one scope (ops/blas.h), float32
// again after it.
struct Bf16Scope {
  Bf16Scope() { REQUIRE(SetComputePrecision(Precision::kBf16).ok()); }
  ~Bf16Scope() { (void)SetComputePrecision(Precision::kFp32); }
  Bf16Scope(const Bf16Scope&) = delete;
  Bf16Scope& operator=(const Bf16Scope&) = delete;
};

// Every element of got within tolerance of want's, relative to want's largest
// magnitude (at least 1e-3): sums that cancel make a per-element relative
// bound meaningless. A NaN fails.
inline void CheckClose(const std::vector<float>& want, const std::vector<float>& got, const std::string& what,
                       double tolerance = 1e-5) {
  REQUIRE(want.size() == got.size());
  double scale = 1e-3, worst = 0.0;
  for (float v : want) scale = std::max(scale, std::fabs(double(v)));
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = std::fabs(double(want[i]) - got[i]) / scale;
    worst = std::isnan(d) ? HUGE_VAL : std::max(worst, d);
  }
  INFO(what << ": worst difference " << worst << " of the largest magnitude " << scale);
  CHECK(worst < tolerance);
}

}  // namespace shoal
