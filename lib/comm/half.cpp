#include "comm/half.h"

#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace shoal {
namespace {

uint32_t BitsOf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}

float FloatOf(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// Float bit patterns (magnitudes) where the half encoding changes regime.
constexpr uint32_t kFloatInf = 0x7f800000;
constexpr uint32_t kRoundsToHalfInf = 0x477ff000;     // 65520: halfway past 65504, ties to the even infinity
constexpr uint32_t kSmallestHalfNormal = 0x38800000;  // 2^-14
constexpr uint32_t kHalfSubnormalFloor = 0x33000000;  // 2^-25: half of the smallest subnormal, ties to 0

// Drops the low `shift` bits of `m` rounding to nearest, ties to even.
uint32_t ShiftRoundEven(uint32_t m, int shift) {
  const uint32_t half_way = 1u << (shift - 1);
  const uint32_t rest = m & ((1u << shift) - 1);
  uint32_t q = m >> shift;
  if (rest > half_way || (rest == half_way && (q & 1))) ++q;
  return q;
}

}  // namespace

uint16_t FloatToHalf(float value) {
  const uint32_t x = BitsOf(value);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t magnitude = x & 0x7fffffff;
  if (magnitude >= kFloatInf) {
    if (magnitude == kFloatInf) return sign | 0x7c00;
    // Quiet, with the payload's top bits: never an infinity.
    return static_cast<uint16_t>(sign | 0x7e00 | ((magnitude >> 13) & 0x3ff));
  }
  if (magnitude >= kRoundsToHalfInf) return sign | 0x7c00;
  if (magnitude >= kSmallestHalfNormal) {
    // Rebias the exponent (127 -> 15) and round the mantissa's low 13 bits; a
    // carry out of the mantissa steps the exponent up, as it should.
    return static_cast<uint16_t>(sign | ShiftRoundEven(magnitude - ((127u - 15u) << 23), 13));
  }
  if (magnitude <= kHalfSubnormalFloor) return sign;
  // A subnormal half counts units of 2^-24: the float's full significand,
  // shifted from its exponent down to that unit. Rounding up from the largest
  // subnormal gives 0x0400, the smallest normal, as it should.
  const int exponent = static_cast<int>(magnitude >> 23);
  const uint32_t significand = (magnitude & 0x7fffff) | 0x800000;
  return static_cast<uint16_t>(sign | ShiftRoundEven(significand, 126 - exponent));
}

float HalfToFloat(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000) << 16;
  const uint32_t exponent = (half >> 10) & 0x1f;
  const uint32_t mantissa = half & 0x3ff;
  if (exponent == 0x1f) {
    if (mantissa == 0) return FloatOf(sign | kFloatInf);
    return FloatOf(sign | kFloatInf | 0x400000 | (mantissa << 13));  // quiet, as converting makes a NaN
  }
  if (exponent != 0) return FloatOf(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa × 2^-24, exact in float.
  return FloatOf(sign | BitsOf(static_cast<float>(mantissa) * 0x1p-24f));
}

namespace {

void FloatsToHalvesScalar(const float* values, size_t count, unsigned char* bytes) {
  for (size_t i = 0; i < count; ++i) {
    const uint16_t h = FloatToHalf(values[i]);
    bytes[2 * i] = static_cast<unsigned char>(h & 0xff);
    bytes[2 * i + 1] = static_cast<unsigned char>(h >> 8);
  }
}

void HalvesToFloatsScalar(const unsigned char* bytes, size_t count, float* values) {
  for (size_t i = 0; i < count; ++i)
    values[i] = HalfToFloat(static_cast<uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8)));
}

#if defined(__x86_64__)
// x86-64's F16C instructions convert 8 values at once by the same IEEE rules
// (rounding to nearest even is asked for; NaNs are quietened keeping the top
// payload bits, as FloatToHalf does), several times faster than the loop
// above. Chosen at run time: the build does not assume the CPU.
__attribute__((target("avx,f16c"))) void FloatsToHalvesF16c(const float* values, size_t count,
                                                            unsigned char* bytes) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i h =
        _mm256_cvtps_ph(_mm256_loadu_ps(values + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(bytes + 2 * i), h);
  }
  FloatsToHalvesScalar(values + i, count - i, bytes + 2 * i);
}

__attribute__((target("avx,f16c"))) void HalvesToFloatsF16c(const unsigned char* bytes, size_t count,
                                                            float* values) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8)
    _mm256_storeu_ps(values + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + 2 * i))));
  HalvesToFloatsScalar(bytes + 2 * i, count - i, values + i);
}

bool HasF16c() {
  // F16C by cpuid: clang's __builtin_cpu_supports does not know it.
  static const bool has = [] {
    unsigned eax, ebx, ecx, edx;
    return __builtin_cpu_supports("avx") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
  }();
  return has;
}
#endif

}  // namespace

void FloatsToHalves(const float* values, size_t count, unsigned char* bytes) {
#if defined(__x86_64__)
  if (HasF16c()) return FloatsToHalvesF16c(values, count, bytes);
#endif
  FloatsToHalvesScalar(values, count, bytes);
}

void HalvesToFloats(const unsigned char* bytes, size_t count, float* values) {
#if defined(__x86_64__)
  if (HasF16c()) return HalvesToFloatsF16c(bytes, count, values);
#endif
  HalvesToFloatsScalar(bytes, count, values);
}

}  // namespace shoal
