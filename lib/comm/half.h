// IEEE 754 binary16 ("half") conversion for parameters and gradients on the
// wire (cluster.wire: fp16). Written out rather than taken from a library:
// Debian packages none for C++ that is kept up, and _Float16 is not on
// every compiler shoal builds with. The rules are IEEE's:
//  - float to half rounds to nearest, ties to even, at every magnitude
//    (subnormal halves included); what rounds past 65504 becomes ±infinity;
//  - infinities keep their sign; a NaN stays a NaN, made quiet, with its
//    sign and the top payload bits that fit;
//  - half to float is exact.
// The array conversions use x86-64's F16C instructions where the CPU has
// them (same results, about 15 times faster), the loops over the scalar
// ones elsewhere.
#pragma once

#include <cstddef>
#include <cstdint>

namespace shoal {

uint16_t FloatToHalf(float value);
float HalfToFloat(uint16_t half);

// `count` values to or from little-endian halves at `bytes` (2 × count
// bytes, any alignment).
void FloatsToHalves(const float* values, size_t count, unsigned char* bytes);
void HalvesToFloats(const unsigned char* bytes, size_t count, float* values);

}  // namespace shoal
