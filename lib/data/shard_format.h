// The constants of the shard file and manifest encodings (data/shard.h
// describes them), shared by the reader and the writers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace shoal {

inline constexpr char kShardMagic[8] = {'S', 'H', 'O', 'A', 'L', 'S', 'H', 'D'};
inline constexpr char kIndexMagic[8] = {'S', 'H', 'O', 'A', 'L', 'I', 'D', 'X'};
inline constexpr uint32_t kShardVersionRaw = 1;
inline constexpr uint32_t kShardVersionEncoded = 2;
// Version 2 adds a held-out validation set, the stored form, class names and
// the channels' statistics; version 1 manifests are still read.
inline constexpr int kManifestVersion = 2;
inline constexpr const char* kManifestFormat = "shoal-shards";

// The fixed part of a header: magic, version, record bytes, record count, rank.
inline constexpr size_t kFixedHeaderBytes = 8 + 4 + 4 + 8 + 4;
// What a record adds to its bytes: u32 label, u32 CRC; an encoded one, its u32 length too.
inline constexpr uint64_t kRecordOverhead = 8;
inline constexpr uint64_t kEncodedRecordOverhead = 12;
// After an encoded shard's index: the index's CRC, its offset, the magic.
inline constexpr uint64_t kTrailerBytes = 4 + 8 + 8;
// Shapes are [channels, rows, cols] or [symbols]; a larger rank means garbage.
inline constexpr uint32_t kMaxRank = 8;
// An encoded record: an image's JPEG or PNG, at most this large.
inline constexpr uint32_t kMaxEncodedRecordBytes = 64u << 20;

}  // namespace shoal
