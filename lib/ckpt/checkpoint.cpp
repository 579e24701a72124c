#include "ckpt/checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/build_info.h"
#include "core/file_util.h"
#include "core/hash.h"

namespace shoal {
namespace {

using nlohmann::json;

constexpr char kMagic[8] = {'S', 'H', 'O', 'A', 'L', 'C', 'K', 'P'};
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kPreamble = 8 + 4 + 8;

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
  if (header_bytes > bytes.size() - kPreamble - 4)
    return Status::Corruption("'" + path + "': header of " + std::to_string(header_bytes) +
                              " bytes runs past the end of the file (truncated?)");
  uint32_t stored;
  std::memcpy(&stored, bytes.data() + kPreamble + header_bytes, 4);
  uint32_t computed = Crc32(bytes.data() + kPreamble, header_bytes);
  if (stored != computed)
    return Status::Corruption("'" + path + "': header checksum mismatch (bytes " +
                              std::to_string(kPreamble) + ".." + std::to_string(kPreamble + header_bytes) + ")");
  *header = json::parse(bytes.begin() + kPreamble, bytes.begin() + kPreamble + header_bytes, nullptr, false);
  if (header->is_discarded()) return Status::Corruption("'" + path + "': header is not JSON");
  *data_start = kPreamble + header_bytes + 4;
  return Status::Ok();
}

}  // namespace

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
                 {"servers", ckpt.servers},
                 {"step", ckpt.step},            {"updates", ckpt.updates},
                 {"created_by", BuildCommit()},  {"metric", ckpt.metric},
                 {"updates_from", ckpt.updates_from},
                 {"tensors", json::array()}};
  uint64_t offset = 0;
  for (const auto& t : ckpt.tensors) {
    uint64_t bytes = 4ull * t.data.size();
    header["tensors"].push_back({{"name", t.name}, {"param", t.param}, {"role", t.role},
                                 {"key", t.key}, {"offset", t.offset}, {"shape", t.shape}, {"count", t.data.size()},
                                 {"data_offset", offset}, {"crc32", Crc32(t.data.data(), bytes)}});
    offset += bytes;
  }
  std::string text = header.dump();
  std::string out(kMagic, 8);
  uint32_t version = kFormatVersion;
  uint64_t header_bytes = text.size();
  uint32_t header_crc = Crc32(text.data(), text.size());
  out.append(reinterpret_cast<const char*>(&version), 4);
  out.append(reinterpret_cast<const char*>(&header_bytes), 8);
  out += text;
  out.append(reinterpret_cast<const char*>(&header_crc), 4);
  out.reserve(out.size() + offset);
  for (const auto& t : ckpt.tensors)
    out.append(reinterpret_cast<const char*>(t.data.data()), 4 * t.data.size());
  return WriteFileAtomic(path, out);
}

Status ReadCheckpointHeader(const std::string& path, json* header) {
  // Reads the preamble and the header only: listing a directory of large
  // checkpoints must not read their tensors.
  std::ifstream in(path, std::ios::binary);
  std::error_code ec;
  uint64_t file_bytes = std::filesystem::file_size(path, ec);
  if (!in || ec) return Status::IOError("cannot open '" + path + "': " + std::strerror(errno));
  std::string bytes(kPreamble, '\0');
  in.read(&bytes[0], kPreamble);
  bytes.resize(static_cast<size_t>(in.gcount()));
  if (bytes.size() == kPreamble) {
    uint64_t header_bytes;
    std::memcpy(&header_bytes, bytes.data() + 12, 8);
    // The header and its CRC, or what the file has of them (ParseFile names a truncation).
    uint64_t want = std::min<uint64_t>(header_bytes + 4, file_bytes - kPreamble);
    std::string rest(want, '\0');
    in.read(&rest[0], static_cast<std::streamsize>(want));
    rest.resize(static_cast<size_t>(in.gcount()));
    bytes += rest;
  }
  size_t data_start;
  return ParseFile(path, bytes, header, &data_start);
}

Status ReadCheckpoint(const std::string& path, Checkpoint* ckpt) {
  std::string bytes;
  SHOAL_RETURN_IF_ERROR(ReadFile(path, &bytes));
  json h;
  size_t data_start;
  SHOAL_RETURN_IF_ERROR(ParseFile(path, bytes, &h, &data_start));
  *ckpt = Checkpoint();
  try {
    ckpt->plan_hash = h.at("plan_hash");
    ckpt->server = h.at("server");
    ckpt->servers = h.value("servers", 0);
    ckpt->step = h.at("step");
    ckpt->updates = h.at("updates");
    ckpt->metric = h.value("metric", json());
    ckpt->updates_from = h.value("updates_from", std::vector<uint64_t>());
    for (const auto& t : h.at("tensors")) {
      CheckpointTensor tensor;
      tensor.name = t.at("name");
      tensor.param = t.at("param");
      tensor.role = t.at("role");
      tensor.key = t.at("key");
      tensor.offset = t.at("offset");
      tensor.shape = t.at("shape").get<std::vector<int>>();
      uint64_t count = t.at("count"), at = data_start + t.at("data_offset").get<uint64_t>();
      uint64_t end = at + 4 * count;
      std::string where = "'" + path + "': tensor '" + tensor.name + "' (bytes " + std::to_string(at) +
                          ".." + std::to_string(end) + ")";
      if (end > bytes.size()) return Status::Corruption(where + " runs past the end of the file (truncated?)");
      uint32_t crc = Crc32(bytes.data() + at, 4 * count);
      if (crc != t.at("crc32").get<uint32_t>()) return Status::Corruption(where + ": checksum mismatch");
      tensor.data.resize(count);
      std::memcpy(tensor.data.data(), bytes.data() + at, 4 * count);
      ckpt->tensors.push_back(std::move(tensor));
    }
  } catch (const json::exception& e) {
    return Status::Corruption("'" + path + "': malformed header: " + e.what());
  }
  return Status::Ok();
}

}  // namespace shoal
