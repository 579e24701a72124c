// Stable checksums and content hashes used by file formats and the wire.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/host_device.h"

namespace shoal {

// CRC-32 (zlib's polynomial) of a byte range: per-record and per-tensor checksums.
uint32_t Crc32(const void* data, size_t size);
// The same over several pieces: `crc` is the CRC of the pieces before (0 for none).
uint32_t Crc32(uint32_t crc, const void* data, size_t size);

// FNV-1a 64-bit hash: identifies a plan's content, a shard file's.
uint64_t Fnv1a64(const std::string& bytes);
// The same over several pieces: start from kFnv1a64Start, feed each in turn.
inline constexpr uint64_t kFnv1a64Start = 14695981039346656037ull;
uint64_t Fnv1a64(uint64_t hash, const void* data, size_t size);

// The two below compile for a GPU too, so that its draws are the host's bit for bit.
// SplitMix64's finaliser: a bijective mix of 64 bits, each output bit
// depending on every input bit; the step of counter-based random draws.
SHOAL_HOST_DEVICE inline uint64_t Mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Draw i of the counter-based stream `key`: the top 24 bits of
// Mix64(key + i), a float in [0, 1).
SHOAL_HOST_DEVICE inline float UnitDraw(uint64_t key, uint64_t i) {
  return static_cast<float>(Mix64(key + i) >> 40) * (1.0f / 16777216.0f);
}

// A fast 64-bit hash of n floats' bit patterns (not for files: it may change
// between versions): what keys a record's random draws (lib/ops/rbm.h).
uint64_t HashFloats(uint64_t seed, const float* x, size_t n);

std::string HexU64(uint64_t value);

}  // namespace shoal
