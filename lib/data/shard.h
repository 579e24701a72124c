// Data shards written by dl-shard and read by dl-worker.
//
// A shard directory holds manifest.json (schemas/manifest.schema.json),
// train-NNNNN.shard files, test.shard and, where a validation set was held
// out, val.shard. A shard file is:
//   header: magic "SHOALSHD" (8 bytes), u32 format version, u32 record size
//           in bytes (0: records of their own sizes), u64 record count, u32
//           rank, rank × u32 dims (an image's [C, H, W], H and W 0 where the
//           images' sizes vary; a text's [symbols]), u32 CRC-32 of the header
//           bytes before it;
//   version 1 (raw records): each record its bytes (u8 × record size), u32
//           label, u32 CRC-32 of bytes+label;
//   version 2 (encoded records, an image's JPEG or PNG each): each record u32
//           length, its bytes, u32 label, u32 CRC-32 of bytes+label; then the
//           index, u64 offset of every record, its u32 CRC-32, and the
//           trailer: u64 offset of the index, magic "SHOALIDX".
// All integers little-endian. A raw image's pixels are uint8, height ×
// width × channels (HWC); readers scale them to [0, 1]. Records are dealt to
// shards like cards: shuffled record i goes to shard i mod N, so N workers
// each taking B consecutive records of their shard see the same records per
// step as one worker taking N·B consecutive records of a single shard.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "tensor/tensor.h"

namespace shoal {

// How a shard's records hold their data.
enum class StoredForm { kRaw, kJpeg };

struct ShardInfo {
  std::string file;  // relative to the directory
  uint64_t records = 0;
  // Fnv1a64 of the whole file as 16 lowercase hex digits (HexU64). Not a CRC-32:
  // every record ends with its own CRC, so a whole file's CRC-32 is a constant.
  std::string fnv1a64;
};

struct Manifest {
  std::string dataset;  // e.g. "fashion-mnist"
  // Per record: an image's [channels, height, width] (height and width 0
  // where the images' sizes vary), a text's [symbols].
  Shape record_shape;
  int classes = 0;
  // A text dataset's symbols, as the byte values they stand for, in id order
  // (empty for images): its records hold symbol ids, read as they are; an
  // image's bytes are pixels, read scaled to [0, 1].
  std::vector<int> vocabulary;
  uint64_t seed = 0;
  // The train shards are contiguous stretches of the records in their order
  // (dl-shard --contiguous; manifest "order": "contiguous"), not shuffled.
  bool contiguous = false;
  StoredForm stored = StoredForm::kRaw;
  std::vector<std::string> class_names;  // label i's name; empty where the dataset has none
  // Per channel, over the training records' pixels scaled to [0, 1]; empty
  // where dl-shard did not measure them (a text).
  std::vector<double> mean, std;
  std::vector<ShardInfo> train;
  ShardInfo test;
  std::optional<ShardInfo> val;  // held out of the training records (dl-shard --val-fraction)
};

// Reads and checks dir/manifest.json; errors name the file and the field.
// Returns ReadFile's and ParseManifest's errors; *manifest is unchanged then.
Status LoadManifest(const std::string& dir, Manifest* manifest);
// The same from its text; `source` names it in messages. InvalidArgument,
// *manifest unchanged, for text that is not JSON or not a valid manifest.
Status ParseManifest(const std::string& text, const std::string& source, Manifest* manifest);

// Reads one shard file's records by index, each checked against its CRC-32.
class ShardReader {
 public:
  ShardReader() = default;
  ~ShardReader();
  ShardReader(const ShardReader&) = delete;
  ShardReader& operator=(const ShardReader&) = delete;

  // Opens a shard file and checks its header, its size and (encoded records)
  // its index: Corruption naming the file and what does not fit, IOError
  // where it cannot be read, InvalidArgument for what is not a regular file.
  // The reader holds no records after an error.
  Status Open(const std::string& path);
  // Opens `dir`/`info.file` and checks that it is the shard the manifest
  // lists: its record count, its records' shape and form, and the whole
  // file's FNV-1a 64; a record whose label is not one of the manifest's
  // classes is refused as it is read. Returns Open(path)'s errors and
  // Fnv1a64OfFile's, and Corruption for a file that differs from the
  // manifest; the file stays open after a mismatch.
  Status Open(const std::string& dir, const ShardInfo& info, const Manifest& manifest);
  const std::string& path() const { return path_; }
  uint64_t records() const { return records_; }
  const Shape& record_shape() const { return shape_; }
  StoredForm stored() const { return stored_; }
  // Record `index` as stored (pixels, or an image's encoded bytes) and its
  // label, its checksum verified. Safe to call from several threads.
  // InvalidArgument for an index out of range, Corruption for a bad record
  // (named by file and index), IOError for a failed read. *bytes may be
  // part-filled on error; *label is set only on success.
  Status ReadRecord(uint64_t index, std::vector<uint8_t>* bytes, int32_t* label) const;
  // A raw record as floats: pixels scaled to [0, 1] in the order stored,
  // symbol ids (a text's) kept as they are and checked against the
  // vocabulary. Fails as ReadRecord does, and with InvalidArgument for a
  // shard of encoded records. *values may be part-filled on error.
  Status Read(uint64_t index, float* values, int32_t* label) const;

 private:
  Status ReadHeader(uint64_t file_size, uint32_t* version, uint32_t* record_bytes);
  Status ReadIndex(uint64_t file_size);

  std::string path_;
  int fd_ = -1;
  Shape shape_;
  StoredForm stored_ = StoredForm::kRaw;
  uint32_t record_bytes_ = 0;
  uint64_t records_ = 0;
  uint64_t data_offset_ = 0;
  std::vector<uint64_t> offsets_;  // encoded records: each record's start, then the index's
  uint32_t classes_ = 0x7fffffff;  // labels must be below it
  uint32_t symbols_ = 0;           // a text dataset's vocabulary size: ids must be below it
};

}  // namespace shoal
