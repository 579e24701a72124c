#include "ckpt/checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string_view>
#include <vector>

#include "core/build_info.h"
#include "core/file_util.h"
#include "core/hash.h"
#include "core/json_fields.h"
#include "core/json_text.h"
#include "core/text.h"

namespace shoal {
namespace {

using nlohmann::json;

constexpr char kMagic[8] = {'S', 'H', 'O', 'A', 'L', 'C', 'K', 'P'};
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kPreamble = 8 + 4 + 8;
// What a header may hold: far beyond any plan's, finite for a hostile file.
constexpr size_t kMaxHeaderBytes = 256u << 20;
constexpr uint64_t kMaxServers = kMaxCheckpointServers, kMaxWorkers = 1u << 20;

// The size of a stream's data: not known before it is read.
constexpr uint64_t kUnknownSize = UINT64_MAX;

// PARAM, PARAM[OFFSET] for a slice of it, either with @ROLE for a state's
// (lib/ps/checkpointer.cpp names them so).
bool IsTensorName(const CheckpointTensor& t) {
  std::string rest = t.name;
  if (rest.rfind(t.param, 0) != 0) return false;
  rest.erase(0, t.param.size());
  if (!rest.empty() && rest[0] == '[') {
    const size_t close = rest.find(']');
    if (close == std::string::npos || close == 1 || rest.find_first_not_of("0123456789", 1) != close)
      return false;
    rest.erase(0, close + 1);
  }
  return rest.empty() || rest == "@" + t.role;
}

// One entry of the header's tensor list: names, key, slice, shape, and
// where its data lies (`count` floats at `at`, checksum `crc`).
Status ReadTensorEntry(const JsonFields& f, const json& t, const std::string& in, CheckpointTensor* tensor,
                       uint64_t* count, uint64_t* at, uint64_t* crc) {
  SHOAL_RETURN_IF_ERROR(f.String(t, in, "name", &tensor->name, 1024));
  SHOAL_RETURN_IF_ERROR(f.String(t, in, "param", &tensor->param, 1024));
  SHOAL_RETURN_IF_ERROR(f.String(t, in, "role", &tensor->role, 64));
  // Names become archive members and file names (dl-ckpt export): a parameter's, as a job's layers make
  // them.
  const std::string plain = "must be 1 to " + std::to_string(kMaxParamNameBytes) + " of " + kPlainNameChars;
  if (!IsPlainName(tensor->param, kMaxParamNameBytes)) return f.Error(in + "param", plain);
  if (!IsTensorRole(tensor->role))
    return f.Error(in + "role", "must be 'value' or an updater's state ('velocity', 'exp_avg', ...), not " +
                                    Quoted(tensor->role));
  if (!IsTensorName(*tensor))
    return f.Error(in + "name", "must be its param's, with [offset] and @state where they apply");
  uint64_t key = 0;
  SHOAL_RETURN_IF_ERROR(f.Unsigned(t, in, "key", UINT32_MAX, &key));
  tensor->key = static_cast<uint32_t>(key);
  SHOAL_RETURN_IF_ERROR(f.Unsigned(t, in, "offset", UINT64_MAX, &tensor->offset));
  const json* shape;
  SHOAL_RETURN_IF_ERROR(f.Get(t, in, "shape", &shape));
  uint64_t size = 1;
  if (!shape->is_array() || shape->size() > 8)
    return f.Error(in + "shape", "must be a list of at most 8 dims");
  for (const json& d : *shape) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() == 0 || d.get<uint64_t>() > INT32_MAX ||
        size > (uint64_t{1} << 40) / d.get<uint64_t>())
      return f.Error(in + "shape", "must hold positive dims of at most 2^40 floats in all");
    size *= d.get<uint64_t>();
    tensor->shape.push_back(static_cast<int>(d.get<uint64_t>()));
  }
  SHOAL_RETURN_IF_ERROR(f.Unsigned(t, in, "count", size, count));
  if (tensor->offset > size - *count)
    return f.Error(in + "offset", "puts floats " + std::to_string(tensor->offset) + "+" +
                                      std::to_string(*count) + " past its parameter's " +
                                      std::to_string(size));
  SHOAL_RETURN_IF_ERROR(f.Unsigned(t, in, "data_offset", UINT64_MAX, at));
  SHOAL_RETURN_IF_ERROR(f.Unsigned(t, in, "crc32", UINT32_MAX, crc));
  return Status::Ok();
}

// The header's fields and the tensors' bytes, each checked against the
// `data_bytes` that follow the header: every tensor within its parameter and
// within the file, one after another from the data's start to the file's
// end. `data` null: the layout only (before the data is read, so that a
// file far larger than its header says is never read); otherwise each
// tensor's checksum too, and its floats copied. `data_bytes` kUnknownSize
// (a stream): what follows is not checked; `data_end` (if given) receives
// where the last tensor's data ends.
Status ReadHeader(const std::string& path, const json& h, const char* data_or_null, uint64_t data_bytes,
                  size_t data_start, Checkpoint* ckpt, uint64_t* data_end = nullptr) {
  const JsonFields f(path);
  *ckpt = Checkpoint();
  uint64_t u = 0;
  int64_t i = 0;
  SHOAL_RETURN_IF_ERROR(f.String(h, "", "plan_hash", &ckpt->plan_hash, 64));
  SHOAL_RETURN_IF_ERROR(f.Int(h, "", "server", -1, kMaxServers - 1, &i));
  ckpt->server = static_cast<int>(i);
  if (h.contains("servers")) SHOAL_RETURN_IF_ERROR(f.Unsigned(h, "", "servers", kMaxServers, &u));
  ckpt->servers = static_cast<int>(u);
  SHOAL_RETURN_IF_ERROR(f.Unsigned(h, "", "step", UINT64_MAX, &ckpt->step));
  SHOAL_RETURN_IF_ERROR(f.Unsigned(h, "", "updates", UINT64_MAX, &ckpt->updates));
  ckpt->metric = h.value("metric", json());
  // What `dl-ckpt best` ranks sets by: an accuracy is a share. (A loss that overflowed is
  // written as null, and such a metric is passed over, not refused: the tensors stay usable.)
  if (!ckpt->metric.is_null() && !ckpt->metric.is_object()) return f.Error("metric", "must be an object");
  if (ckpt->metric.is_object() && ckpt->metric.contains("test_accuracy") &&
      ckpt->metric.at("test_accuracy").is_number()) {
    const double accuracy = ckpt->metric.at("test_accuracy").get<double>();
    if (!(accuracy >= 0.0 && accuracy <= 1.0))
      return f.Error("metric.test_accuracy", "must be a share from 0 to 1, not " + std::to_string(accuracy));
  }
  if (h.contains("updates_from")) {
    const json& from = h.at("updates_from");
    if (!from.is_array() || from.size() > kMaxWorkers)
      return f.Error("updates_from", "must be a list of at most " + std::to_string(kMaxWorkers) + " steps");
    for (size_t w = 0; w < from.size(); ++w) {
      if (!from[w].is_number_unsigned())
        return f.Error("updates_from[" + std::to_string(w) + "]", "must be a step");
      ckpt->updates_from.push_back(from[w].get<uint64_t>());
    }
  }
  const json* tensors;
  SHOAL_RETURN_IF_ERROR(f.Get(h, "", "tensors", &tensors));
  if (!tensors->is_array()) return f.Error("tensors", "must be a list");
  uint64_t next = 0;  // where the next tensor's data must start
  for (size_t k = 0; k < tensors->size(); ++k) {
    const json& t = (*tensors)[k];
    const std::string in = "tensors[" + std::to_string(k) + "].";
    CheckpointTensor tensor;
    uint64_t count = 0, at = 0, crc = 0;
    SHOAL_RETURN_IF_ERROR(ReadTensorEntry(f, t, in, &tensor, &count, &at, &crc));
    const std::string where = "'" + path + "': tensor " + Quoted(tensor.name) + " (bytes " +
                              std::to_string(data_start + at) + ".." +
                              std::to_string(data_start + at + 4 * count) + ")";
    if (at != next) return Status::Corruption(where + ": its data does not follow the tensor before it");
    if (count > (data_bytes - at) / 4)
      return Status::Corruption(where + " runs past the end of the file (truncated?)");
    if (data_or_null) {
      const char* data = data_or_null + at;
      if (Crc32(data, 4 * count) != crc) return Status::Corruption(where + ": checksum mismatch");
      tensor.data.resize(count);
      std::memcpy(tensor.data.data(), data, 4 * count);
    }
    next = at + 4 * count;
    ckpt->tensors.push_back(std::move(tensor));
  }
  if (data_end) *data_end = next;
  if (data_bytes != kUnknownSize && next != data_bytes)
    return Status::Corruption("'" + path + "': " + std::to_string(data_bytes - next) +
                              " bytes after the last tensor's data");
  return Status::Ok();
}

// Splits a file into its verified header and the data that follows.
Status ParseFile(const std::string& path, const std::string& bytes, json* header, size_t* data_start) {
  if (bytes.size() < kPreamble + 4 || std::memcmp(bytes.data(), kMagic, 8) != 0)
    return Status::Corruption("'" + path + "' is not a shoal checkpoint (bad magic or too short)");
  uint32_t version;
  uint64_t header_bytes;
  std::memcpy(&version, bytes.data() + 8, 4);
  std::memcpy(&header_bytes, bytes.data() + 12, 8);
  if (version != kFormatVersion)
    return Status::Corruption("'" + path + "': checkpoint format version " + std::to_string(version) +
                              ", this build reads " + std::to_string(kFormatVersion));
  if (header_bytes > kMaxHeaderBytes)
    return Status::Corruption("'" + path + "': header of " + std::to_string(header_bytes) +
                              " bytes, at most " + std::to_string(kMaxHeaderBytes) + " in a checkpoint");
  if (header_bytes > bytes.size() - kPreamble - 4)
    return Status::Corruption("'" + path + "': header of " + std::to_string(header_bytes) +
                              " bytes runs past the end of the file (truncated?)");
  uint32_t stored;
  std::memcpy(&stored, bytes.data() + kPreamble + header_bytes, 4);
  uint32_t computed = Crc32(bytes.data() + kPreamble, header_bytes);
  if (stored != computed)
    return Status::Corruption("'" + path + "': header checksum mismatch (bytes " + std::to_string(kPreamble) +
                              ".." + std::to_string(kPreamble + header_bytes) + ")");
  Status parsed = ParseJson(bytes.data() + kPreamble, bytes.data() + kPreamble + header_bytes,
                            "'" + path + "'", header, kMaxHeaderBytes);
  if (!parsed.ok()) return Status::Corruption(parsed.message() + " (its header)");
  if (!header->is_object()) return Status::Corruption("'" + path + "': its header is not a JSON object");
  *data_start = kPreamble + header_bytes + 4;
  return Status::Ok();
}

}  // namespace

bool IsTensorRole(const std::string& role) {
  static const std::set<std::string, std::less<>> kRoles{"value",      "velocity", "sum_sq",
                                                         "square_avg", "exp_avg",  "exp_avg_sq"};
  return kRoles.count(role) > 0;
}

std::string CheckpointPath(const std::string& dir, int server, uint64_t step) {
  char name[64];
  std::snprintf(name, sizeof name, "server-%d-step-%010llu.ckpt", server,
                static_cast<unsigned long long>(step));
  return dir + "/" + name;
}

std::vector<std::string> ListCheckpoints(const std::string& dir, int server) {
  std::vector<std::string> found;
  std::string prefix = "server-" + std::to_string(server) + "-step-";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && name.size() > 5 && name.substr(name.size() - 5) == ".ckpt")
      found.push_back(entry.path().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

bool IsUnfinishedCheckpoint(const std::string& name, int server) {
  const std::string prefix = server < 0 ? "server-" : "server-" + std::to_string(server) + "-step-";
  return name.rfind(prefix, 0) == 0 && name.find(".ckpt.tmp.") != std::string::npos;
}

std::vector<std::string> LatestCheckpoints(const std::string& dir) {
  // Every server named in the directory: a server without checkpoints (yet)
  // must not hide the ones after it.
  std::set<int> servers;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    int server;
    if (std::sscanf(entry.path().filename().string().c_str(), "server-%d-step-", &server) == 1 && server >= 0)
      servers.insert(server);
  }
  std::vector<std::string> latest;
  for (int server : servers) {
    std::vector<std::string> all = ListCheckpoints(dir, server);
    if (!all.empty()) latest.push_back(all.back());
  }
  return latest;
}

Status WriteCheckpoint(const std::string& path, const Checkpoint& ckpt) {
  json header = {{"format", "shoal-checkpoint"}, {"version", kFormatVersion},
                 {"plan_hash", ckpt.plan_hash},  {"server", ckpt.server},
                 {"servers", ckpt.servers},      {"step", ckpt.step},
                 {"updates", ckpt.updates},      {"created_by", BuildCommit()},
                 {"metric", ckpt.metric},        {"updates_from", ckpt.updates_from},
                 {"tensors", json::array()}};
  uint64_t offset = 0;
  for (const auto& t : ckpt.tensors) {
    uint64_t bytes = 4ull * t.data.size();
    header["tensors"].push_back({{"name", t.name},
                                 {"param", t.param},
                                 {"role", t.role},
                                 {"key", t.key},
                                 {"offset", t.offset},
                                 {"shape", t.shape},
                                 {"count", t.data.size()},
                                 {"data_offset", offset},
                                 {"crc32", Crc32(t.data.data(), bytes)}});
    offset += bytes;
  }
  std::string text = header.dump();
  std::string head(kMagic, 8);
  uint32_t version = kFormatVersion;
  uint64_t header_bytes = text.size();
  uint32_t header_crc = Crc32(text.data(), text.size());
  head.append(reinterpret_cast<const char*>(&version), 4);
  head.append(reinterpret_cast<const char*>(&header_bytes), 8);
  head += text;
  head.append(reinterpret_cast<const char*>(&header_crc), 4);
  // The tensors go to the file from where they are, never copied into one string.
  std::vector<std::string_view> pieces{head};
  for (const auto& t : ckpt.tensors)
    pieces.emplace_back(reinterpret_cast<const char*>(t.data.data()), 4 * t.data.size());
  return WriteFileAtomic(path, pieces);
}

namespace {

// Where a checkpoint is read from: a regular file, whose size is known, or
// a stream (standard input for "-", a pipe, a device), read as far as its
// header says.
struct Source {
  std::ifstream file;
  std::istream* in = nullptr;
  uint64_t size = kUnknownSize;
};

Status Open(const std::string& path, Source* source) {
  if (path == "-") {
    source->in = &std::cin;
    return Status::Ok();
  }
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec) return Status::IOError("cannot open '" + path + "': " + ec.message());
  if (std::filesystem::is_directory(status))
    return Status::InvalidArgument("'" + path + "' is a directory, not a checkpoint file");
  if (std::filesystem::is_regular_file(status)) source->size = std::filesystem::file_size(path, ec);
  source->file.open(path, std::ios::binary);
  if (!source->file || ec) return Status::IOError("cannot open '" + path + "': " + std::strerror(errno));
  source->in = &source->file;
  return Status::Ok();
}

// Reads the preamble and the header only (listing a directory of large
// checkpoints must not read their tensors), leaving `source` at the data.
Status ReadPreambleAndHeader(const std::string& path, Source& source, json* header, size_t* data_start) {
  std::string bytes(kPreamble, '\0');
  source.in->read(&bytes[0], kPreamble);
  bytes.resize(static_cast<size_t>(source.in->gcount()));
  if (bytes.size() == kPreamble) {
    uint64_t header_bytes;
    std::memcpy(&header_bytes, bytes.data() + 12, 8);
    // The header and its CRC, or what the file has of them (ParseFile names a truncation).
    uint64_t want = std::min<uint64_t>(header_bytes, kMaxHeaderBytes) + 4;
    if (source.size != kUnknownSize) want = std::min<uint64_t>(want, source.size - kPreamble);
    std::string rest(want, '\0');
    source.in->read(&rest[0], static_cast<std::streamsize>(want));
    rest.resize(static_cast<size_t>(source.in->gcount()));
    bytes += rest;
  }
  return ParseFile(path, bytes, header, data_start);
}

}  // namespace

Status ReadCheckpointHeader(const std::string& path, json* header) {
  Source source;
  SHOAL_RETURN_IF_ERROR(Open(path, &source));
  size_t data_start;
  return ReadPreambleAndHeader(path, source, header, &data_start);
}

Status ReadCheckpoint(const std::string& path, Checkpoint* ckpt) {
  Source source;
  SHOAL_RETURN_IF_ERROR(Open(path, &source));
  json h;
  size_t data_start;
  SHOAL_RETURN_IF_ERROR(ReadPreambleAndHeader(path, source, &h, &data_start));
  try {
    // The layout first: the data is read only once the header accounts for
    // every byte of a file (of a stream, what the header says is read).
    const uint64_t data_bytes = source.size == kUnknownSize ? kUnknownSize : source.size - data_start;
    uint64_t data_end = 0;
    SHOAL_RETURN_IF_ERROR(ReadHeader(path, h, nullptr, data_bytes, data_start, ckpt, &data_end));
    // In pieces, so that a stream whose header claims more than it sends costs only what it sent.
    std::string data;
    if (source.size != kUnknownSize) data.reserve(data_end);  // a file's size is what its header said
    while (data.size() < data_end) {
      const size_t piece = static_cast<size_t>(std::min<uint64_t>(data_end - data.size(), 64u << 20));
      const size_t had = data.size();
      data.resize(had + piece);
      source.in->read(&data[had], static_cast<std::streamsize>(piece));
      if (static_cast<size_t>(source.in->gcount()) != piece)
        return Status::Corruption("'" + path + "': its data ends after " +
                                  std::to_string(had + static_cast<size_t>(source.in->gcount())) +
                                  " of the " + std::to_string(data_end) +
                                  " bytes its header lists (truncated?)");
    }
    if (source.in->peek() != std::char_traits<char>::eof())
      return Status::Corruption("'" + path + "': bytes after the last tensor's data");
    return ReadHeader(path, h, data.data(), data.size(), data_start, ckpt);
  } catch (const json::exception& e) {  // nlohmann's own, should a check above miss one
    return Status::Corruption("'" + path + "': malformed header: " + e.what());
  }
}

}  // namespace shoal
