// Writing a shard directory (format in data/shard.h): shard files record by
// record, and the manifest last, so that a directory with a manifest holds
// every file it names.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "data/shard.h"

namespace shoal {

// Writes one shard file, streaming: records go to `path`.tmp as they come,
// and Finish writes the header's count (and an encoded shard's index) and
// renames the file into place. A writer destroyed unfinished removes its
// temporary file.
class ShardFileWriter {
 public:
  ShardFileWriter() = default;
  ~ShardFileWriter();
  ShardFileWriter(const ShardFileWriter&) = delete;
  ShardFileWriter& operator=(const ShardFileWriter&) = delete;

  // Starts `path` for records of `shape` stored as `form` (raw records are
  // the shape's product in bytes each). IOError where it cannot be created.
  Status Open(const std::string& path, const Shape& shape, StoredForm form);
  // Appends a record. InvalidArgument for a raw record of another size or an
  // encoded one over kMaxEncodedRecordBytes, IOError for a failed write.
  Status Append(const uint8_t* bytes, size_t size, uint32_t label);
  uint64_t records() const { return records_; }
  // Completes the file; fills `info` (its name, records, hash). IOError for a
  // failed write, sync or rename (then nothing is left at `path`).
  Status Finish(ShardInfo* info);

 private:
  // Buffers `size` bytes for the file, writing the buffer out once it is large.
  Status Write(const void* data, size_t size);
  Status Flush();

  std::string path_, temp_;
  int fd_ = -1;
  StoredForm form_ = StoredForm::kRaw;
  size_t header_bytes_ = 0;
  uint32_t record_bytes_ = 0;
  uint64_t records_ = 0, written_ = 0;
  std::vector<uint64_t> offsets_;  // encoded records' starts
  std::string buffer_;
};

// Writes dir/manifest.json (atomically, synced) from `m`, recording the
// build that wrote it. Returns WriteFileAtomic's errors.
Status WriteManifest(const std::string& dir, const Manifest& m);

}  // namespace shoal
