// Stable checksums and content hashes used by file formats and the wire.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace shoal {

// CRC-32 (zlib's polynomial) of a byte range: per-record and per-tensor checksums.
uint32_t Crc32(const void* data, size_t size);

// FNV-1a 64-bit hash: identifies a plan's content, a shard file's.
uint64_t Fnv1a64(const std::string& bytes);
// The same over several pieces: start from kFnv1a64Start, feed each in turn.
inline constexpr uint64_t kFnv1a64Start = 14695981039346656037ull;
uint64_t Fnv1a64(uint64_t hash, const void* data, size_t size);

std::string HexU64(uint64_t value);

}  // namespace shoal
