// Tests for lib/comm/half: IEEE binary16 conversion, checked against values
// worked out by hand and against a reference that rounds by brute force
// (the nearest of the two halves around a value, ties to the even one).
#include "comm/half.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <ios>
#include <limits>
#include <vector>

namespace shoal {
namespace {

float FloatOf(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint32_t BitsOf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}

// The value a half stands for, with the bit pattern past the largest finite
// half (0x7c00) counted as 65536: where IEEE's rounding puts the overflow.
double HalfValue(uint16_t h) {
  if (h == 0x7c00) return 65536.0;
  return static_cast<double>(HalfToFloat(h));
}

// Rounds |f| (finite) to half by search: the largest half at or below it,
// then whichever of it and the next is nearer, ties to the even pattern.
uint16_t ReferenceHalf(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double v = std::fabs(static_cast<double>(f));
  uint16_t lo = 0, hi = 0x7c00;  // HalfValue(lo) <= v < HalfValue(hi) unless v >= 65536
  if (v >= 65536.0) return sign | 0x7c00;
  while (hi - lo > 1) {
    const uint16_t mid = static_cast<uint16_t>((lo + hi) / 2);
    (HalfValue(mid) <= v ? lo : hi) = mid;
  }
  const double below = v - HalfValue(lo), above = HalfValue(hi) - v;
  if (below < above || (below == above && (lo & 1) == 0)) return sign | lo;
  return sign | hi;
}

TEST_CASE("float to half: worked examples at every regime boundary") {
  CHECK(FloatToHalf(0.0f) == 0x0000);
  CHECK(FloatToHalf(-0.0f) == 0x8000);
  CHECK(FloatToHalf(1.0f) == 0x3c00);
  CHECK(FloatToHalf(-2.0f) == 0xc000);
  CHECK(FloatToHalf(0.1f) == 0x2e66);        // 0.0999755859375
  CHECK(FloatToHalf(65504.0f) == 0x7bff);    // the largest finite half
  CHECK(FloatToHalf(65519.996f) == 0x7bff);  // just below halfway to 65536
  CHECK(FloatToHalf(65520.0f) == 0x7c00);    // halfway: ties to the even pattern, infinity
  CHECK(FloatToHalf(1e6f) == 0x7c00);
  CHECK(FloatToHalf(-1e6f) == 0xfc00);
  CHECK(FloatToHalf(0x1p-14f) == 0x0400);             // the smallest normal half
  CHECK(FloatToHalf(0x1p-24f) == 0x0001);             // the smallest subnormal
  CHECK(FloatToHalf(0x1p-25f) == 0x0000);             // halfway to it: ties to even, zero
  CHECK(FloatToHalf(0x1.000002p-25f) == 0x0001);      // just past halfway
  CHECK(FloatToHalf(0x1.8p-24f) == 0x0002);           // 1.5 units: ties to even, 2
  CHECK(FloatToHalf(0x1.4p-24f) == 0x0001);           // 1.25 units: down
  CHECK(FloatToHalf(0x1.ff8p-15f) == 0x03ff);         // the largest subnormal, 1023 units
  CHECK(FloatToHalf(0x1.ffbp-15f) == 0x03ff);         // below halfway to 1024 units
  CHECK(FloatToHalf(0x1.ffcp-15f) == 0x0400);         // halfway: ties to even, up into the normals
  CHECK(FloatToHalf(1.0f + 0x1p-11f) == 0x3c00);      // halfway between 1 and 1 + 2^-10: even
  CHECK(FloatToHalf(1.0f + 3 * 0x1p-11f) == 0x3c02);  // halfway between odd and even: up
  CHECK(FloatToHalf(1e-30f) == 0x0000);
  CHECK(FloatToHalf(FloatOf(0x00000001)) == 0x0000);  // a subnormal float
}

TEST_CASE("float to half: infinities keep their sign and NaNs stay quiet NaNs") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(FloatToHalf(inf) == 0x7c00);
  CHECK(FloatToHalf(-inf) == 0xfc00);
  CHECK(FloatToHalf(std::numeric_limits<float>::quiet_NaN()) == 0x7e00);
  // A signalling NaN whose payload sits only in the bits a half drops must
  // not turn into an infinity.
  const uint16_t snan = FloatToHalf(FloatOf(0x7f800001));
  CHECK((snan & 0x7c00) == 0x7c00);
  CHECK((snan & 0x03ff) != 0);
  const uint16_t negative_nan = FloatToHalf(FloatOf(0xffc12345));
  CHECK((negative_nan & 0x8000) != 0);
  CHECK(std::isnan(HalfToFloat(negative_nan)));
  CHECK((negative_nan & 0x03ff) == (0x200 | (0x412345 >> 13)));  // the payload's top bits, quiet
}

TEST_CASE("half to float is exact for every one of the 65536 patterns, and converting back gives it again") {
  int nans = 0;
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = HalfToFloat(static_cast<uint16_t>(h));
    INFO("half 0x" << std::hex << h);
    const uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    const double sign = (h & 0x8000) ? -1.0 : 1.0;
    if (exponent == 0x1f && mantissa != 0) {
      REQUIRE(std::isnan(f));
      CHECK(std::signbit(f) == ((h & 0x8000) != 0));
      CHECK(FloatToHalf(f) == (h | 0x200));  // quiet, payload kept
      ++nans;
      continue;
    }
    double want = exponent == 0x1f ? sign * std::numeric_limits<double>::infinity()
                  : exponent == 0  ? sign * std::ldexp(mantissa, -24)
                                   : sign * std::ldexp(1024 + mantissa, static_cast<int>(exponent) - 25);
    CHECK(static_cast<double>(f) == want);
    CHECK(std::signbit(f) == ((h & 0x8000) != 0));
    CHECK(FloatToHalf(f) == h);
  }
  CHECK(nans == 2 * 1023);
}

// Bit patterns, so that NaNs compare too.
std::vector<uint32_t> FloatBits(const std::vector<float>& values) {
  std::vector<uint32_t> bits;
  for (float f : values) bits.push_back(BitsOf(f));
  return bits;
}

TEST_CASE(
    "the array conversions (F16C where the CPU has it) agree with the scalar ones on every half and NaN") {
  std::vector<unsigned char> every(2 * 65536);
  std::vector<float> scalar(65536), array(65536);
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    every[2 * h] = static_cast<unsigned char>(h & 0xff);
    every[2 * h + 1] = static_cast<unsigned char>(h >> 8);
    scalar[h] = HalfToFloat(static_cast<uint16_t>(h));
  }
  HalvesToFloats(every.data(), 65536, array.data());
  CHECK(FloatBits(array) == FloatBits(scalar));

  const std::vector<float> specials = {std::numeric_limits<float>::infinity(),
                                       -std::numeric_limits<float>::infinity(),
                                       FloatOf(0x7f800001),
                                       FloatOf(0xffc12345),
                                       FloatOf(0x7fbfffff),
                                       FloatOf(0x00000001),
                                       65520.0f,
                                       -65519.0f,
                                       0x1p-25f,
                                       0x1.8p-24f};
  std::vector<float> values;
  for (int copies = 0; copies < 3; ++copies) values.insert(values.end(), specials.begin(), specials.end());
  std::vector<unsigned char> bytes(2 * values.size());
  FloatsToHalves(values.data(), values.size(), bytes.data());
  for (size_t i = 0; i < values.size(); ++i) {
    INFO("value " << i << ": float 0x" << std::hex << BitsOf(values[i]));
    CHECK((bytes[2 * i] | (bytes[2 * i + 1] << 8)) == FloatToHalf(values[i]));
  }
}

TEST_CASE("float to half matches the brute-force reference on boundaries, ties and a sweep of all floats") {
  std::vector<float> values;
  // Every half, the halfway points between neighbours, and one float step either side of each.
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const double lo = HalfValue(static_cast<uint16_t>(h)), hi = HalfValue(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((lo + hi) / 2);  // exact: halves have 11-bit significands
    for (float f : {static_cast<float>(lo), mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)}) {
      values.push_back(f);
      values.push_back(-f);
    }
  }
  // Every finite float magnitude, in steps of a prime number of patterns.
  for (uint64_t x = 0; x < 0x7f800000; x += 4099) values.push_back(FloatOf(static_cast<uint32_t>(x)));
  // Both the scalar conversion and the array one (F16C where the CPU has it).
  std::vector<unsigned char> bytes(2 * values.size());
  FloatsToHalves(values.data(), values.size(), bytes.data());
  int mismatches = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    const float f = values[i];
    const uint16_t got = FloatToHalf(f), want = ReferenceHalf(f);
    const uint16_t array = static_cast<uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8));
    if ((got != want || array != want) && ++mismatches <= 5)
      FAIL_CHECK("float 0x" << std::hex << BitsOf(f) << " (" << f << "): got 0x" << got << " (array 0x"
                            << array << "), want 0x" << want);
  }
  CHECK(mismatches == 0);
  CHECK(values.size() > 700000);
}

TEST_CASE("the array conversions write little-endian halves at any alignment and read them back") {
  const std::vector<float> values = {1.0f, -2.0f, 65504.0f, 0x1p-24f, 0.333251953125f};
  std::vector<unsigned char> bytes(1 + 2 * values.size());
  FloatsToHalves(values.data(), values.size(), bytes.data() + 1);  // deliberately odd address
  CHECK(bytes[1] == 0x00);
  CHECK(bytes[2] == 0x3c);
  CHECK(bytes[3] == 0x00);
  CHECK(bytes[4] == 0xc0);
  std::vector<float> back(values.size());
  HalvesToFloats(bytes.data() + 1, values.size(), back.data());
  CHECK(back == values);  // each is a half exactly
}

}  // namespace
}  // namespace shoal
