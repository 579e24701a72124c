#include "core/hash.h"

#include <zlib.h>

#include <cstdio>
#include <cstring>

namespace shoal {

uint32_t Crc32(const void* data, size_t size) { return Crc32(0, data, size); }

uint32_t Crc32(uint32_t start, const void* data, size_t size) {
  // zlib takes a uInt length: feed large buffers in pieces.
  uLong crc = start;
  const auto* p = static_cast<const Bytef*>(data);
  while (size > 0) {
    uInt n = size > (1u << 30) ? (1u << 30) : static_cast<uInt>(size);
    crc = crc32(crc, p, n);
    p += n;
    size -= n;
  }
  return static_cast<uint32_t>(crc);
}

uint64_t Fnv1a64(uint64_t h, const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

uint64_t Fnv1a64(const std::string& bytes) { return Fnv1a64(kFnv1a64Start, bytes.data(), bytes.size()); }

uint64_t HashFloats(uint64_t seed, const float* x, size_t n) {
  uint64_t h = Mix64(seed ^ n);
  size_t i = 0;
  // Two floats a word; the multiply and shift spread each word over the state.
  for (; i + 2 <= n; i += 2) {
    uint64_t word;
    std::memcpy(&word, x + i, 8);
    h = (h ^ word) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
  }
  if (i < n) {
    uint32_t last;
    std::memcpy(&last, x + i, 4);
    h = (h ^ last) * 0x9e3779b97f4a7c15ull;
  }
  return Mix64(h);
}

std::string HexU64(uint64_t value) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(value));
  return buf;
}

}  // namespace shoal
