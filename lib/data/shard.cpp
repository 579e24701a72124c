#include "data/shard.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "core/hash.h"
#include "core/json_fields.h"
#include "core/json_text.h"
#include "data/shard_format.h"

namespace shoal {
namespace {

// A manifest lists a few hundred shards at most: a few MB of JSON is plenty.
constexpr size_t kMaxManifestBytes = 16u << 20;

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

Status ParseShape(const Json& root, const ManifestFields& f, Manifest* m) {
  const Json* shape;
  SHOAL_RETURN_IF_ERROR(f.Get(root, "", "record_shape", &shape));
  if (!shape->is_array() || shape->empty() || shape->size() > kMaxRank)
    return f.Error("record_shape", "must be a list of 1.." + std::to_string(kMaxRank) + " dims");
  m->record_shape.clear();
  for (size_t i = 0; i < shape->size(); ++i) {
    const Json& d = (*shape)[i];
    // An image's height and width are 0 where its encoded records' sizes vary.
    const bool may_vary = m->stored == StoredForm::kJpeg && shape->size() == 3 && i > 0;
    if (!d.is_number_unsigned() || (d.get<uint64_t>() == 0 && !may_vary) || d.get<uint64_t>() > 0x7fffffff)
      return f.Error("record_shape", "must hold positive integers");
    m->record_shape.push_back(d.get<int>());
  }
  return Status::Ok();
}

Status ParseVocabulary(const Json& root, const ManifestFields& f, Manifest* m) {
  m->vocabulary.clear();
  if (!root.contains("vocabulary")) return Status::Ok();
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
  if (static_cast<size_t>(m->classes) != v.size())
    return f.Error("classes", "is " + std::to_string(m->classes) + " but the vocabulary holds " +
                                  std::to_string(v.size()) + " symbols");
  return Status::Ok();
}

// The image fields: the stored form, the class names, the channels' mean and deviation.
Status ParseImageFields(const Json& root, const ManifestFields& f, Manifest* m) {
  m->stored = StoredForm::kRaw;
  if (root.contains("stored")) {
    std::string stored;
    SHOAL_RETURN_IF_ERROR(f.String(root, "", "stored", &stored));
    if (stored != "raw" && stored != "jpeg") return f.Error("stored", "must be \"raw\" or \"jpeg\"");
    m->stored = stored == "jpeg" ? StoredForm::kJpeg : StoredForm::kRaw;
  }
  if (root.contains("class_names")) {
    const Json& names = root.at("class_names");
    if (!names.is_array() || names.size() > (1u << 20))
      return f.Error("class_names", "must be a list of names");
    for (const Json& n : names) {
      if (!n.is_string() || n.get_ref<const std::string&>().size() > 4096)
        return f.Error("class_names", "must hold strings of at most 4096 bytes");
      m->class_names.push_back(n.get<std::string>());
    }
  }
  for (auto [key, out] : {std::pair<const char*, std::vector<double>*>{"mean", &m->mean}, {"std", &m->std}}) {
    if (!root.contains(key)) continue;
    const Json& v = root.at(key);
    if (!v.is_array() || v.size() > kMaxRank) return f.Error(key, "must be a list of a number a channel");
    for (const Json& x : v) {
      if (!x.is_number() || !(x.get<double>() >= 0.0 && x.get<double>() <= 1.0))
        return f.Error(key, "must hold numbers in [0, 1]");
      out->push_back(x.get<double>());
    }
  }
  return Status::Ok();
}

Status ParseShards(const Json& root, const ManifestFields& f, Manifest* m) {
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
  if (root.contains("val")) {
    m->val.emplace();
    SHOAL_RETURN_IF_ERROR(f.Shard(root.at("val"), "val", &*m->val));
  }
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

Status ParseManifest(const Json& root, const ManifestFields& f, Manifest* m) {
  static const char* const kKnown[] = {
      "format",        "version",    "dataset", "record_shape", "classes", "vocabulary",
      "seed",          "order",      "train",   "test",         "val",     "shards",
      "train_records", "created_by", "stored",  "class_names",  "mean",    "std"};
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
  if (version < 1 || version > static_cast<uint64_t>(kManifestVersion))
    return f.Error("version", "is " + std::to_string(version) + "; this build reads versions 1 to " +
                                  std::to_string(kManifestVersion));
  SHOAL_RETURN_IF_ERROR(f.String(root, "", "dataset", &m->dataset));
  SHOAL_RETURN_IF_ERROR(ParseImageFields(root, f, m));
  SHOAL_RETURN_IF_ERROR(ParseShape(root, f, m));
  uint64_t classes;
  SHOAL_RETURN_IF_ERROR(f.Unsigned(root, "", "classes", 0x7fffffff, &classes));
  if (classes < 1) return f.Error("classes", "must be at least 1");
  m->classes = static_cast<int>(classes);
  if (!m->class_names.empty() && m->class_names.size() != classes)
    return f.Error("class_names", "names " + std::to_string(m->class_names.size()) + " classes, not " +
                                      std::to_string(classes));
  SHOAL_RETURN_IF_ERROR(ParseVocabulary(root, f, m));
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
  return ParseShards(root, f, m);
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
  if (fd_ >= 0) close(fd_);
}

Status ShardReader::ReadHeader(uint64_t file_size, uint32_t* version, uint32_t* record_bytes) {
  const std::string where = "'" + path_ + "'";
  uint8_t fixed[kFixedHeaderBytes];
  if (file_size < sizeof fixed) return Status::Corruption(where + ": too short for a shard header");
  SHOAL_RETURN_IF_ERROR(ReadAt(fd_, 0, fixed, sizeof fixed, where));
  if (std::memcmp(fixed, kShardMagic, sizeof kShardMagic) != 0)
    return Status::Corruption(where + ": not a shard file (bad magic)");
  *version = LoadU32(fixed + 8);
  if (*version != kShardVersionRaw && *version != kShardVersionEncoded)
    return Status::Corruption(where + ": format version " + std::to_string(*version) +
                              "; this build reads versions 1 and 2");
  *record_bytes = LoadU32(fixed + 12);
  records_ = LoadU64(fixed + 16);
  const uint32_t rank = LoadU32(fixed + 24);
  if (rank < 1 || rank > kMaxRank)
    return Status::Corruption(where + ": rank " + std::to_string(rank) + " is not in 1.." +
                              std::to_string(kMaxRank));
  std::vector<uint8_t> header(fixed, fixed + sizeof fixed);
  header.resize(sizeof fixed + 4 * rank + 4);
  if (file_size < header.size()) return Status::Corruption(where + ": header ends inside the dims");
  SHOAL_RETURN_IF_ERROR(ReadAt(fd_, sizeof fixed, header.data() + sizeof fixed, 4 * rank + 4, where));
  const size_t crc_at = sizeof fixed + 4 * rank;
  const uint32_t stored = LoadU32(header.data() + crc_at);
  const uint32_t computed = Crc32(header.data(), crc_at);
  if (stored != computed)
    return Status::Corruption(where + ": header checksum mismatch (stored " + Hex32(stored) + ", computed " +
                              Hex32(computed) + ")");
  shape_.clear();
  uint64_t elements = 1;
  for (uint32_t i = 0; i < rank; ++i) {
    const uint32_t d = LoadU32(header.data() + sizeof fixed + 4 * i);
    // An encoded image's height and width are 0 where the images' sizes vary.
    const bool may_vary = *version == kShardVersionEncoded && rank == 3 && i > 0;
    if ((d == 0 && !may_vary) || d > 0x7fffffff)
      return Status::Corruption(where + ": dim " + std::to_string(i) + " is " + std::to_string(d));
    elements *= std::max<uint32_t>(d, 1);
    if (elements > UINT32_MAX) return Status::Corruption(where + ": record shape too large");
    shape_.push_back(static_cast<int>(d));
  }
  if (*version == kShardVersionRaw && elements != *record_bytes)
    return Status::Corruption(where + ": record size " + std::to_string(*record_bytes) +
                              " does not match shape " + ShapeToString(shape_));
  if (*version == kShardVersionEncoded && *record_bytes != 0)
    return Status::Corruption(where + ": encoded records have sizes of their own, but the header says " +
                              std::to_string(*record_bytes) + " bytes each");
  data_offset_ = header.size();
  return Status::Ok();
}

// An encoded shard's index: every record's offset, increasing, within the
// records' stretch, each long enough for its length, label and CRC.
Status ShardReader::ReadIndex(uint64_t file_size) {
  const std::string where = "'" + path_ + "'";
  if (file_size < data_offset_ + kTrailerBytes)
    return Status::Corruption(where + ": too short for its index");
  uint8_t trailer[16];
  SHOAL_RETURN_IF_ERROR(ReadAt(fd_, file_size - 16, trailer, 16, where));
  if (std::memcmp(trailer + 8, kIndexMagic, sizeof kIndexMagic) != 0)
    return Status::Corruption(where + ": no index at its end (bad trailer magic: truncated?)");
  const uint64_t index_at = LoadU64(trailer);
  if (records_ > (file_size - kTrailerBytes) / 8 || index_at < data_offset_ ||
      index_at != file_size - kTrailerBytes - 8 * records_)
    return Status::Corruption(where + ": the index of " + std::to_string(records_) +
                              " records does not end where the file does");
  std::vector<uint8_t> index(8 * records_ + 4);
  SHOAL_RETURN_IF_ERROR(ReadAt(fd_, index_at, index.data(), index.size(), where));
  const uint32_t stored = LoadU32(index.data() + 8 * records_);
  if (stored != Crc32(index.data(), 8 * records_))
    return Status::Corruption(where + ": index checksum mismatch");
  offsets_.resize(records_ + 1);
  for (uint64_t i = 0; i < records_; ++i) offsets_[i] = LoadU64(index.data() + 8 * i);
  offsets_[records_] = index_at;
  if (records_ > 0 && offsets_[0] != data_offset_)
    return Status::Corruption(where + ": the first record is not where the header ends");
  for (uint64_t i = 0; i < records_; ++i)
    if (offsets_[i + 1] < offsets_[i] + kEncodedRecordOverhead ||
        offsets_[i + 1] - offsets_[i] > kMaxEncodedRecordBytes + kEncodedRecordOverhead)
      return Status::Corruption(where + ": record " + std::to_string(i) +
                                "'s extent in the index is impossible");
  return Status::Ok();
}

Status ShardReader::Open(const std::string& path) {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  records_ = 0;
  offsets_.clear();
  path_ = path;
  const std::string where = "'" + path + "'";
  fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) return Status::IOError("cannot open " + where + ": " + std::strerror(errno));
  struct stat st;
  if (fstat(fd_, &st) != 0) return Status::IOError("cannot stat " + where + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return Status::InvalidArgument(where + " is not a regular file");
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  uint32_t version = 0, record_bytes = 0;
  Status s = ReadHeader(file_size, &version, &record_bytes);
  if (s.ok() && version == kShardVersionEncoded) s = ReadIndex(file_size);
  if (s.ok() && version == kShardVersionRaw) {
    const uint64_t stride = record_bytes + kRecordOverhead;
    if (records_ > (UINT64_MAX - data_offset_) / stride)
      s = Status::Corruption(where + ": record count " + std::to_string(records_) + " is impossible");
    else if (file_size != data_offset_ + records_ * stride)
      s = Status::Corruption(where + ": file is " + std::to_string(file_size) + " bytes; header says " +
                             std::to_string(records_) + " records, " +
                             std::to_string(data_offset_ + records_ * stride) +
                             " bytes (truncated or trailing data)");
  }
  if (!s.ok()) {
    close(fd_);
    fd_ = -1;
    records_ = 0;
    return s;
  }
  stored_ = version == kShardVersionEncoded ? StoredForm::kJpeg : StoredForm::kRaw;
  record_bytes_ = record_bytes;
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
  if (stored_ != manifest.stored)
    return Status::Corruption(where + " holds " + (stored_ == StoredForm::kJpeg ? "encoded" : "raw") +
                              " records; '" + dir + "/manifest.json' says they are " +
                              (manifest.stored == StoredForm::kJpeg ? "encoded" : "raw"));
  // The whole file against the manifest's hash of it.
  uint64_t hash = 0;
  SHOAL_RETURN_IF_ERROR(Fnv1a64OfFile(fd_, where, &hash));
  if (HexU64(hash) != info.fnv1a64)
    return Status::Corruption(where + " has FNV-1a 64 " + HexU64(hash) + "; '" + dir +
                              "/manifest.json' says " + info.fnv1a64 +
                              " (the file changed after dl-shard wrote it)");
  classes_ = static_cast<uint32_t>(manifest.classes);
  symbols_ = static_cast<uint32_t>(manifest.vocabulary.size());
  return Status::Ok();
}

Status ShardReader::ReadRecord(uint64_t index, std::vector<uint8_t>* bytes, int32_t* label) const {
  const std::string where = "'" + path_ + "': record " + std::to_string(index);
  if (fd_ < 0) return Status::InvalidArgument("'" + path_ + "': shard is not open");
  if (index >= records_)
    return Status::InvalidArgument(where + ": out of range (shard has " + std::to_string(records_) +
                                   " records)");
  const bool encoded = stored_ == StoredForm::kJpeg;
  const uint64_t offset =
      encoded ? offsets_[index] : data_offset_ + index * (record_bytes_ + kRecordOverhead);
  const uint64_t extent = encoded ? offsets_[index + 1] - offset : record_bytes_ + kRecordOverhead;
  bytes->resize(extent);
  SHOAL_RETURN_IF_ERROR(ReadAt(fd_, offset, bytes->data(), extent, where));
  const uint64_t size = extent - (encoded ? kEncodedRecordOverhead : kRecordOverhead);
  const uint8_t* payload = bytes->data() + (encoded ? 4 : 0);
  if (encoded && LoadU32(bytes->data()) != size)
    return Status::Corruption(where + ": its length says " + std::to_string(LoadU32(bytes->data())) +
                              " bytes, the index " + std::to_string(size));
  const uint32_t stored = LoadU32(payload + size + 4);
  const uint32_t computed = Crc32(payload, size + 4);
  if (stored != computed)
    return Status::Corruption(where + ": checksum mismatch (stored " + Hex32(stored) + ", computed " +
                              Hex32(computed) + ")");
  const uint32_t raw_label = LoadU32(payload + size);
  if (raw_label >= classes_)
    return Status::Corruption(where + ": label " + std::to_string(raw_label) + " is not one of the " +
                              std::to_string(classes_) + " classes");
  *label = static_cast<int32_t>(raw_label);
  if (encoded) bytes->erase(bytes->begin(), bytes->begin() + 4);
  bytes->resize(size);
  return Status::Ok();
}

Status ShardReader::Read(uint64_t index, float* values, int32_t* label) const {
  if (stored_ != StoredForm::kRaw)
    return Status::InvalidArgument("'" + path_ + "' holds encoded images: they are decoded by the loader");
  thread_local std::vector<uint8_t> record;
  SHOAL_RETURN_IF_ERROR(ReadRecord(index, &record, label));
  if (symbols_ == 0) {
    for (uint32_t i = 0; i < record_bytes_; ++i) values[i] = record[i] * kPixelScale;
    return Status::Ok();
  }
  for (uint32_t i = 0; i < record_bytes_; ++i) {
    if (record[i] >= symbols_)
      return Status::Corruption("'" + path_ + "': record " + std::to_string(index) + ": byte " +
                                std::to_string(i) + " is symbol " + std::to_string(record[i]) +
                                ", not one of the vocabulary's " + std::to_string(symbols_));
    values[i] = record[i];
  }
  return Status::Ok();
}

}  // namespace shoal
