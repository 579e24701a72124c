// Data shards written by dl-shard and read by dl-worker.
//
// A shard directory holds manifest.json (schemas/manifest.schema.json),
// train-NNNNN.shard files and test.shard. A shard file is:
//   header: magic "SHOALSHD" (8 bytes), u32 format version (1), u32 record
//           size in bytes (pixels), u64 record count, u32 rank (number of
//           dims), rank × u32 dims, u32 CRC-32 of the header bytes before it;
//   records: pixels (u8 × record size), u32 label, u32 CRC-32 of pixels+label.
// All integers little-endian. Records are dealt to shards like cards:
// shuffled record i goes to shard i mod N, so N workers each taking B
// consecutive records of their shard see the same records per step as one
// worker taking N·B consecutive records of a single shard.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/status.h"
#include "tensor/tensor.h"

namespace shoal {

struct ShardInfo {
  std::string file;  // relative to the directory
  uint64_t records = 0;
  // Fnv1a64 of the whole file as 16 lowercase hex digits (HexU64). Not a CRC-32:
  // every record ends with its own CRC, so a whole file's CRC-32 is a constant.
  std::string fnv1a64;
};

struct Manifest {
  std::string dataset;  // e.g. "fashion-mnist"
  Shape record_shape;   // per record, e.g. [1, 28, 28]
  int classes = 0;
  // A text dataset's symbols, as the byte values they stand for, in id order
  // (empty for images): its records hold symbol ids, read as they are; an
  // image's bytes are pixels, read scaled to [0, 1].
  std::vector<int> vocabulary;
  uint64_t seed = 0;
  // The train shards are contiguous stretches of the records in their order
  // (dl-shard --contiguous; manifest "order": "contiguous"), not shuffled.
  bool contiguous = false;
  std::vector<ShardInfo> train;
  ShardInfo test;
};

// Reads and checks dir/manifest.json; errors name the file and the field.
Status LoadManifest(const std::string& dir, Manifest* manifest);
// The same from its text; `source` names it in messages.
Status ParseManifest(const std::string& text, const std::string& source, Manifest* manifest);

class ShardReader {
 public:
  ShardReader() = default;
  ~ShardReader();
  ShardReader(const ShardReader&) = delete;
  ShardReader& operator=(const ShardReader&) = delete;

  Status Open(const std::string& path);
  // Opens `dir`/`info.file` and checks that it is the shard the manifest
  // lists: its record count, its records' shape, and the whole file's FNV-1a
  // 64; a record whose label is not one of the manifest's classes is refused
  // as it is read.
  Status Open(const std::string& dir, const ShardInfo& info, const Manifest& manifest);
  const std::string& path() const { return path_; }
  uint64_t records() const { return records_; }
  const Shape& record_shape() const { return shape_; }
  // Reads record `index`, verifying its checksum; pixels are scaled to [0,1],
  // symbol ids (a text dataset's) kept as they are and checked against the vocabulary.
  // A bad record is refused naming the file and the record index.
  Status Read(uint64_t index, float* pixels, int32_t* label);

 private:
  std::string path_;
  FILE* file_ = nullptr;
  Shape shape_;
  uint32_t record_bytes_ = 0;
  uint64_t records_ = 0;
  uint64_t data_offset_ = 0;
  uint32_t classes_ = 0x7fffffff;  // labels must be below it
  uint32_t symbols_ = 0;           // a text dataset's vocabulary size: ids must be below it
  std::vector<uint8_t> buffer_;
};

}  // namespace shoal
