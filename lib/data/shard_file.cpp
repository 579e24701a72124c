#include "data/shard_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/build_info.h"
#include "core/file_util.h"
#include "core/hash.h"
#include "data/shard_format.h"

namespace shoal {
namespace {

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutU64(std::string* out, uint64_t v) {
  PutU32(out, static_cast<uint32_t>(v));
  PutU32(out, static_cast<uint32_t>(v >> 32));
}

constexpr size_t kFlushBytes = 1 << 20;

std::string Basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string Dirname(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

ShardFileWriter::~ShardFileWriter() {
  if (fd_ >= 0) {
    close(fd_);
    unlink(temp_.c_str());
  }
}

Status ShardFileWriter::Open(const std::string& path, const Shape& shape, StoredForm form) {
  path_ = path;
  // A name of its own: dl-shard runs writing the same directory at once (tests
  // sharing shards) each rename a whole file into place.
  temp_ = path + ".tmp.XXXXXX";
  form_ = form;
  records_ = written_ = 0;
  offsets_.clear();
  uint64_t elements = 1;
  for (int d : shape) elements *= static_cast<uint64_t>(std::max(d, 1));
  record_bytes_ = form == StoredForm::kRaw ? static_cast<uint32_t>(elements) : 0;
  fd_ = mkostemp(&temp_[0], O_CLOEXEC);
  if (fd_ < 0 || fchmod(fd_, 0644) != 0)
    return Status::IOError("cannot create '" + temp_ + "': " + std::strerror(errno));
  std::string header;
  header.append(kShardMagic, sizeof kShardMagic);
  PutU32(&header, form == StoredForm::kRaw ? kShardVersionRaw : kShardVersionEncoded);
  PutU32(&header, record_bytes_);
  PutU64(&header, 0);  // the count, written by Finish
  PutU32(&header, static_cast<uint32_t>(shape.size()));
  for (int d : shape) PutU32(&header, static_cast<uint32_t>(d));
  PutU32(&header, 0);  // the header's CRC, written by Finish
  header_bytes_ = header.size();
  buffer_.clear();
  return Write(header.data(), header.size());
}

Status ShardFileWriter::Write(const void* data, size_t size) {
  buffer_.append(static_cast<const char*>(data), size);
  written_ += size;
  return buffer_.size() < kFlushBytes ? Status::Ok() : Flush();
}

Status ShardFileWriter::Flush() {
  const char* p = buffer_.data();
  size_t left = buffer_.size();
  while (left > 0) {
    const ssize_t n = write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOError("cannot write '" + temp_ + "': " + std::strerror(errno));
    p += n;
    left -= static_cast<size_t>(n);
  }
  buffer_.clear();
  return Status::Ok();
}

Status ShardFileWriter::Append(const uint8_t* bytes, size_t size, uint32_t label) {
  if (form_ == StoredForm::kRaw && size != record_bytes_)
    return Status::InvalidArgument("a record of " + std::to_string(size) + " bytes for '" + path_ +
                                   "', whose records are " + std::to_string(record_bytes_));
  if (form_ != StoredForm::kRaw && size > kMaxEncodedRecordBytes)
    return Status::InvalidArgument("an encoded record of " + std::to_string(size) + " bytes: at most " +
                                   std::to_string(kMaxEncodedRecordBytes));
  std::string framing;
  if (form_ != StoredForm::kRaw) {
    offsets_.push_back(written_);
    PutU32(&framing, static_cast<uint32_t>(size));
    SHOAL_RETURN_IF_ERROR(Write(framing.data(), framing.size()));
    framing.clear();
  }
  SHOAL_RETURN_IF_ERROR(Write(bytes, size));
  std::string tail;
  PutU32(&tail, label);
  uint32_t crc = Crc32(0, bytes, size);
  crc = Crc32(crc, tail.data(), 4);
  PutU32(&tail, crc);
  ++records_;
  return Write(tail.data(), tail.size());
}

Status ShardFileWriter::Finish(ShardInfo* info) {
  if (form_ != StoredForm::kRaw) {
    std::string index;
    for (uint64_t offset : offsets_) PutU64(&index, offset);
    PutU32(&index, Crc32(index.data(), index.size()));
    PutU64(&index, written_);  // where the index begins
    index.append(kIndexMagic, sizeof kIndexMagic);
    SHOAL_RETURN_IF_ERROR(Write(index.data(), index.size()));
  }
  SHOAL_RETURN_IF_ERROR(Flush());
  // The header's count and CRC, now known.
  std::string header(header_bytes_, '\0');
  if (pread(fd_, header.data(), header_bytes_, 0) != static_cast<ssize_t>(header_bytes_))
    return Status::IOError("cannot read back '" + temp_ + "'");
  std::string count;
  PutU64(&count, records_);
  header.replace(16, 8, count);
  std::string crc;
  PutU32(&crc, Crc32(header.data(), header_bytes_ - 4));
  header.replace(header_bytes_ - 4, 4, crc);
  if (pwrite(fd_, header.data(), header_bytes_, 0) != static_cast<ssize_t>(header_bytes_))
    return Status::IOError("cannot write '" + temp_ + "': " + std::strerror(errno));
  // The whole file's hash, which the manifest records, read back.
  uint64_t hash = 0;
  SHOAL_RETURN_IF_ERROR(Fnv1a64OfFile(fd_, "back '" + temp_ + "'", &hash));
  if (fsync(fd_) != 0) return Status::IOError("cannot sync '" + temp_ + "': " + std::strerror(errno));
  close(fd_);
  fd_ = -1;
  if (rename(temp_.c_str(), path_.c_str()) != 0) {
    const Status s = Status::IOError("cannot rename '" + temp_ + "': " + std::strerror(errno));
    unlink(temp_.c_str());
    return s;
  }
  const int dir = open(Dirname(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    fsync(dir);
    close(dir);
  }
  info->file = Basename(path_);
  info->records = records_;
  info->fnv1a64 = HexU64(hash);
  return Status::Ok();
}

Status WriteManifest(const std::string& dir, const Manifest& m) {
  nlohmann::ordered_json j;
  j["format"] = kManifestFormat;
  j["version"] = kManifestVersion;
  j["dataset"] = m.dataset;
  j["record_shape"] = m.record_shape;
  j["classes"] = m.classes;
  if (!m.vocabulary.empty()) j["vocabulary"] = m.vocabulary;
  if (m.stored != StoredForm::kRaw) j["stored"] = "jpeg";
  if (!m.class_names.empty()) j["class_names"] = m.class_names;
  if (!m.mean.empty()) j["mean"] = m.mean;
  if (!m.std.empty()) j["std"] = m.std;
  j["seed"] = m.seed;
  if (m.contiguous) j["order"] = "contiguous";
  j["shards"] = m.train.size();
  uint64_t records = 0;
  for (const ShardInfo& s : m.train) records += s.records;
  j["train_records"] = records;
  auto shard = [](const ShardInfo& s) {
    return nlohmann::ordered_json{{"file", s.file}, {"records", s.records}, {"fnv1a64", s.fnv1a64}};
  };
  j["train"] = nlohmann::ordered_json::array();
  for (const ShardInfo& s : m.train) j["train"].push_back(shard(s));
  if (m.val) j["val"] = shard(*m.val);
  j["test"] = shard(m.test);
  j["created_by"] = BuildCommit();
  return WriteFileAtomic(dir + "/manifest.json", j.dump(2) + "\n");
}

}  // namespace shoal
