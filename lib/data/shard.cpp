#include "data/shard.h"

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "core/hash.h"
#include "core/json_fields.h"
#include "core/json_text.h"
#include "data/shard_writer.h"

namespace shoal {
namespace {

// A manifest lists a few hundred shards at most: a few MB of JSON is plenty.
constexpr size_t kMaxManifestBytes = 16u << 20;

// Fixed part of the header: magic, version, record bytes, record count, rank.
constexpr size_t kFixedHeaderBytes = 8 + 4 + 4 + 8 + 4;
// A record on disk is its pixels plus u32 label and u32 CRC.
constexpr uint64_t kRecordOverhead = 8;
// Shapes we store are [channels, rows, cols]; a larger rank means garbage.
constexpr uint32_t kMaxRank = 8;
constexpr float kPixelScale = 1.0f / 255.0f;

uint32_t LoadU32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
uint64_t LoadU64(const uint8_t* p) { return LoadU32(p) | (uint64_t{LoadU32(p + 4)} << 32); }

std::string Hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// ---- manifest ----

using Json = nlohmann::json;

// The manifest's fields, plus what a shard entry is.
class ManifestFields : public JsonFields {
 public:
  using JsonFields::JsonFields;
  // A shard's file name: plain, so a manifest cannot point outside its directory.
  Status Shard(const Json& obj, const std::string& field, ShardInfo* shard) const {
    static const char* const kKnown[] = {"file", "records", "fnv1a64", nullptr};
    SHOAL_RETURN_IF_ERROR(OnlyKnown(obj, field + ".", kKnown));
    SHOAL_RETURN_IF_ERROR(String(obj, field + ".", "file", &shard->file, 255));
    if (shard->file.find('/') != std::string::npos || shard->file == "." || shard->file == "..")
      return Error(field + ".file", "must be a file name within the directory");
    SHOAL_RETURN_IF_ERROR(Unsigned(obj, field + ".", "records", UINT64_MAX, &shard->records));
    SHOAL_RETURN_IF_ERROR(String(obj, field + ".", "fnv1a64", &shard->fnv1a64));
    if (shard->fnv1a64.size() != 16 ||
        shard->fnv1a64.find_first_not_of("0123456789abcdef") != std::string::npos)
      return Error(field + ".fnv1a64", "must be 16 lowercase hex digits");
    return Status::Ok();
  }
};

Status ParseManifest(const Json& root, const ManifestFields& f, Manifest* m) {
  static const char* const kKnown[] = {"format",     "version",       "dataset",   "record_shape", "classes",
                                       "vocabulary", "seed",          "order",     "train",        "test",
                                       "shards",     "train_records", "created_by"};
  for (auto it = root.begin(); it != root.end(); ++it) {
    bool known = false;
    for (const char* k : kKnown) known = known || it.key() == k;
    if (!known) return f.Error(it.key(), "is not a known field");
  }
  std::string format;
  SHOAL_RETURN_IF_ERROR(f.String(root, "", "format", &format));
  if (format != kManifestFormat) return f.Error("format", "must be \"" + std::string(kManifestFormat) + "\"");
  uint64_t version;
  SHOAL_RETURN_IF_ERROR(f.Unsigned(root, "", "version", UINT32_MAX, &version));
  if (version != static_cast<uint64_t>(kManifestVersion))
    return f.Error("version", "is " + std::to_string(version) + "; this build reads version " +
                                  std::to_string(kManifestVersion));
  SHOAL_RETURN_IF_ERROR(f.String(root, "", "dataset", &m->dataset));

  const Json* shape;
  SHOAL_RETURN_IF_ERROR(f.Get(root, "", "record_shape", &shape));
  if (!shape->is_array() || shape->empty() || shape->size() > kMaxRank)
    return f.Error("record_shape", "must be a list of 1.." + std::to_string(kMaxRank) + " dims");
  m->record_shape.clear();
  for (const Json& d : *shape) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() == 0 || d.get<uint64_t>() > 0x7fffffff)
      return f.Error("record_shape", "must hold positive integers");
    m->record_shape.push_back(d.get<int>());
  }
  uint64_t classes;
  SHOAL_RETURN_IF_ERROR(f.Unsigned(root, "", "classes", 0x7fffffff, &classes));
  if (classes < 1) return f.Error("classes", "must be at least 1");
  m->classes = static_cast<int>(classes);
  m->vocabulary.clear();
  if (root.contains("vocabulary")) {
    const Json& v = root.at("vocabulary");
    if (!v.is_array() || v.empty() || v.size() > 256)
      return f.Error("vocabulary", "must be a list of 1..256 byte values");
    std::vector<bool> seen(256, false);
    for (const Json& b : v) {
      if (!b.is_number_unsigned() || b.get<uint64_t>() > 255 || seen[b.get<uint64_t>()])
        return f.Error("vocabulary", "must hold distinct byte values 0..255");
      seen[b.get<uint64_t>()] = true;
      m->vocabulary.push_back(b.get<int>());
    }
    if (classes != v.size())
      return f.Error("classes", "is " + std::to_string(classes) + " but the vocabulary holds " +
                                    std::to_string(v.size()) + " symbols");
  }
  SHOAL_RETURN_IF_ERROR(f.Unsigned(root, "", "seed", UINT64_MAX, &m->seed));
  m->contiguous = false;
  if (root.contains("order")) {
    std::string order;
    SHOAL_RETURN_IF_ERROR(f.String(root, "", "order", &order));
    if (order != "contiguous")
      return f.Error("order", "must be \"contiguous\" when present (absent: shuffled)");
    m->contiguous = true;
  }
  std::string created_by;
  SHOAL_RETURN_IF_ERROR(f.String(root, "", "created_by", &created_by));

  const Json* train;
  SHOAL_RETURN_IF_ERROR(f.Get(root, "", "train", &train));
  if (!train->is_array() || train->empty()) return f.Error("train", "must be a non-empty list");
  m->train.clear();
  uint64_t total = 0;
  for (size_t i = 0; i < train->size(); ++i) {
    ShardInfo shard;
    SHOAL_RETURN_IF_ERROR(f.Shard((*train)[i], "train[" + std::to_string(i) + "]", &shard));
    total += shard.records;
    m->train.push_back(std::move(shard));
  }
  const Json* test;
  SHOAL_RETURN_IF_ERROR(f.Get(root, "", "test", &test));
  SHOAL_RETURN_IF_ERROR(f.Shard(*test, "test", &m->test));

  // Redundant counts, checked so a hand-edited manifest cannot disagree with itself.
  uint64_t shards, train_records;
  SHOAL_RETURN_IF_ERROR(f.Unsigned(root, "", "shards", UINT32_MAX, &shards));
  if (shards != m->train.size())
    return f.Error("shards", "is " + std::to_string(shards) + " but 'train' lists " +
                                 std::to_string(m->train.size()) + " shards");
  SHOAL_RETURN_IF_ERROR(f.Unsigned(root, "", "train_records", UINT64_MAX, &train_records));
  if (train_records != total)
    return f.Error("train_records", "is " + std::to_string(train_records) + " but the train shards hold " +
                                        std::to_string(total));
  return Status::Ok();
}

}  // namespace

Status ParseManifest(const std::string& text, const std::string& source, Manifest* manifest) {
  Json root;
  SHOAL_RETURN_IF_ERROR(ParseJson(text, "'" + source + "'", &root, kMaxManifestBytes));
  if (!root.is_object()) return Status::InvalidArgument("'" + source + "': must be a JSON object");
  Manifest m;
  SHOAL_RETURN_IF_ERROR(ParseManifest(root, ManifestFields(source), &m));
  *manifest = std::move(m);
  return Status::Ok();
}

Status LoadManifest(const std::string& dir, Manifest* manifest) {
  const std::string path = dir + "/manifest.json";
  std::string text;
  SHOAL_RETURN_IF_ERROR(ReadFile(path, &text, kMaxManifestBytes));
  return ParseManifest(text, path, manifest);
}

// ---- shard files ----

ShardReader::~ShardReader() {
  if (file_) std::fclose(file_);
}

Status ShardReader::Open(const std::string& path) {
  if (file_) {
    std::fclose(file_);
    file_ = nullptr;
  }
  records_ = 0;
  path_ = path;
  const std::string where = "'" + path + "'";
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return Status::IOError("cannot open " + where + ": " + std::strerror(errno));
  // Owns `f` until the header checks pass.
  struct Closer {
    FILE*& f;
    ~Closer() {
      if (f) std::fclose(f);
    }
  } closer{f};

  if (fseeko(f, 0, SEEK_END) != 0) return Status::IOError("cannot seek in " + where);
  const off_t file_size = ftello(f);
  if (file_size < 0 || fseeko(f, 0, SEEK_SET) != 0) return Status::IOError("cannot seek in " + where);

  uint8_t fixed[kFixedHeaderBytes];
  if (std::fread(fixed, 1, sizeof fixed, f) != sizeof fixed)
    return Status::Corruption(where + ": too short for a shard header");
  if (std::memcmp(fixed, kShardMagic, sizeof kShardMagic) != 0)
    return Status::Corruption(where + ": not a shard file (bad magic)");
  const uint32_t version = LoadU32(fixed + 8);
  if (version != kShardVersion)
    return Status::Corruption(where + ": format version " + std::to_string(version) +
                              "; this build reads version " + std::to_string(kShardVersion));
  const uint32_t record_bytes = LoadU32(fixed + 12);
  const uint64_t records = LoadU64(fixed + 16);
  const uint32_t rank = LoadU32(fixed + 24);
  if (rank < 1 || rank > kMaxRank)
    return Status::Corruption(where + ": rank " + std::to_string(rank) + " is not in 1.." +
                              std::to_string(kMaxRank));

  std::vector<uint8_t> header(fixed, fixed + sizeof fixed);
  header.resize(sizeof fixed + 4 * rank + 4);
  if (std::fread(header.data() + sizeof fixed, 1, 4 * rank + 4, f) != 4 * rank + 4)
    return Status::Corruption(where + ": header ends inside the dims");
  const size_t crc_at = sizeof fixed + 4 * rank;
  const uint32_t stored = LoadU32(header.data() + crc_at);
  const uint32_t computed = Crc32(header.data(), crc_at);
  if (stored != computed)
    return Status::Corruption(where + ": header checksum mismatch (stored " + Hex32(stored) + ", computed " +
                              Hex32(computed) + ")");

  Shape shape;
  uint64_t pixels = 1;
  for (uint32_t i = 0; i < rank; ++i) {
    uint32_t d = LoadU32(header.data() + sizeof fixed + 4 * i);
    if (d == 0 || d > 0x7fffffff)
      return Status::Corruption(where + ": dim " + std::to_string(i) + " is " + std::to_string(d));
    pixels *= d;
    if (pixels > UINT32_MAX) return Status::Corruption(where + ": record shape too large");
    shape.push_back(static_cast<int>(d));
  }
  if (pixels != record_bytes)
    return Status::Corruption(where + ": record size " + std::to_string(record_bytes) +
                              " does not match shape " + ShapeToString(shape));
  const uint64_t data_offset = header.size();
  const uint64_t stride = record_bytes + kRecordOverhead;
  if (records > (UINT64_MAX - data_offset) / stride)
    return Status::Corruption(where + ": record count " + std::to_string(records) + " is impossible");
  const uint64_t expected = data_offset + records * stride;
  if (static_cast<uint64_t>(file_size) != expected)
    return Status::Corruption(where + ": file is " + std::to_string(file_size) + " bytes; header says " +
                              std::to_string(records) + " records, " + std::to_string(expected) +
                              " bytes (truncated or trailing data)");

  file_ = f;
  f = nullptr;  // ownership moves to the reader
  shape_ = std::move(shape);
  record_bytes_ = record_bytes;
  records_ = records;
  data_offset_ = data_offset;
  buffer_.resize(stride);
  return Status::Ok();
}

Status ShardReader::Open(const std::string& dir, const ShardInfo& info, const Manifest& manifest) {
  const std::string path = dir + "/" + info.file;
  SHOAL_RETURN_IF_ERROR(Open(path));
  const std::string where = "'" + path + "'";
  if (records_ != info.records)
    return Status::Corruption(where + " holds " + std::to_string(records_) + " records; '" + dir +
                              "/manifest.json' says " + std::to_string(info.records));
  if (shape_ != manifest.record_shape)
    return Status::Corruption(where + " holds records of " + ShapeToString(shape_) + "; '" + dir +
                              "/manifest.json' says " + ShapeToString(manifest.record_shape));
  // The whole file against the manifest's hash of it (read once, in pieces).
  uint64_t hash = kFnv1a64Start;
  std::vector<unsigned char> chunk(1 << 20);
  if (fseeko(file_, 0, SEEK_SET) != 0) return Status::IOError("cannot seek in " + where);
  for (size_t n; (n = std::fread(chunk.data(), 1, chunk.size(), file_)) > 0;)
    hash = Fnv1a64(hash, chunk.data(), n);
  if (std::ferror(file_)) return Status::IOError("cannot read " + where);
  if (HexU64(hash) != info.fnv1a64)
    return Status::Corruption(where + " has FNV-1a 64 " + HexU64(hash) + "; '" + dir +
                              "/manifest.json' says " + info.fnv1a64 +
                              " (the file changed after dl-shard wrote it)");
  classes_ = static_cast<uint32_t>(manifest.classes);
  symbols_ = static_cast<uint32_t>(manifest.vocabulary.size());
  return Status::Ok();
}

Status ShardReader::Read(uint64_t index, float* pixels, int32_t* label) {
  const std::string where = "'" + path_ + "': record " + std::to_string(index);
  if (!file_) return Status::InvalidArgument("'" + path_ + "': shard is not open");
  if (index >= records_)
    return Status::InvalidArgument(where + ": out of range (shard has " + std::to_string(records_) +
                                   " records)");
  const uint64_t offset = data_offset_ + index * buffer_.size();
  if (fseeko(file_, static_cast<off_t>(offset), SEEK_SET) != 0)
    return Status::IOError(where + ": cannot seek: " + std::strerror(errno));
  if (std::fread(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size())
    return Status::IOError(where + ": short read");
  const uint32_t stored = LoadU32(buffer_.data() + record_bytes_ + 4);
  const uint32_t computed = Crc32(buffer_.data(), record_bytes_ + 4);
  if (stored != computed)
    return Status::Corruption(where + ": checksum mismatch (stored " + Hex32(stored) + ", computed " +
                              Hex32(computed) + ")");
  const uint32_t raw_label = LoadU32(buffer_.data() + record_bytes_);
  if (raw_label >= classes_)
    return Status::Corruption(where + ": label " + std::to_string(raw_label) + " is not one of the " +
                              std::to_string(classes_) + " classes");
  if (symbols_ == 0) {
    for (uint32_t i = 0; i < record_bytes_; ++i) pixels[i] = buffer_[i] * kPixelScale;
  } else {
    for (uint32_t i = 0; i < record_bytes_; ++i) {
      if (buffer_[i] >= symbols_)
        return Status::Corruption(where + ": byte " + std::to_string(i) + " is symbol " +
                                  std::to_string(buffer_[i]) + ", not one of the vocabulary's " +
                                  std::to_string(symbols_));
      pixels[i] = buffer_[i];
    }
  }
  *label = static_cast<int32_t>(raw_label);
  return Status::Ok();
}

}  // namespace shoal
