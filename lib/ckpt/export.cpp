#include "ckpt/export.h"

#include <cstdint>
#include <limits>

#include "core/build_info.h"
#include "core/file_util.h"
#include "core/hash.h"

namespace shoal {
namespace {

void PutLe(std::string* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

// A tensor's bytes: float32 or int64, little-endian on our hosts.
uint64_t DataBytes(const ExportTensor& t) {
  return t.type == ExportType::kInt64 ? sizeof t.integer : 4ull * t.data->size();
}

void AppendData(std::string* out, const ExportTensor& t) {
  if (t.type == ExportType::kInt64)
    out->append(reinterpret_cast<const char*>(&t.integer), sizeof t.integer);
  else
    out->append(reinterpret_cast<const char*>(t.data->data()), DataBytes(t));
}

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Zip's MS-DOS time fields: 1980-01-01 00:00, so the same model gives the same bytes.
constexpr uint16_t kDosTime = 0, kDosDate = (0 << 9) | (1 << 5) | 1;

}  // namespace

Status ChooseExportFormat(const std::string& name, const std::string& path, ExportFormat* format) {
  std::string n = name;
  if (n.empty()) {
    if (EndsWith(path, ".npz"))
      n = "npz";
    else if (EndsWith(path, ".safetensors"))
      n = "safetensors";
    else
      return Status::InvalidArgument("cannot tell the format of '" + path +
                                     "' from its name: end it in .npz or .safetensors, or pass --format");
  }
  if (n == "npz")
    *format = ExportFormat::kNpz;
  else if (n == "safetensors")
    *format = ExportFormat::kSafetensors;
  else
    return Status::InvalidArgument("format '" + n + "' is not npz or safetensors");
  return Status::Ok();
}

Status ExportTensors(const Checkpoint& merged, bool with_state, std::vector<ExportTensor>* tensors) {
  tensors->clear();
  if (merged.server != -1)
    return Status::InvalidArgument("server " + std::to_string(merged.server) +
                                   "'s checkpoint holds slices: merge the servers' set first");
  for (const auto& t : merged.tensors) {
    if (t.role != "value" && !with_state) continue;
    size_t size = 1;
    for (int d : t.shape) size *= d > 0 ? static_cast<size_t>(d) : 0;
    if (t.offset != 0 || t.data.size() != size)
      return Status::Corruption("tensor '" + t.name + "' holds " + std::to_string(t.data.size()) +
                                " floats at " + std::to_string(t.offset) + ", not the whole parameter (" +
                                std::to_string(size) + ")");
    tensors->push_back({t.name, t.shape, &t.data});
    // PyTorch's BatchNorm counts its training batches beside the running averages.
    const std::string running_var = ".running_var";
    if (t.role == "value" && EndsWith(t.name, running_var)) {
      const std::string layer = t.name.substr(0, t.name.size() - running_var.size());
      tensors->push_back({layer + ".num_batches_tracked",
                          {},
                          nullptr,
                          ExportType::kInt64,
                          static_cast<int64_t>(merged.step)});
    }
  }
  if (tensors->empty()) return Status::InvalidArgument("the checkpoint has no parameter values to export");
  return Status::Ok();
}

std::string EncodeNpy(const ExportTensor& tensor) {
  // A Python tuple: "()", "(10,)", "(256, 784)".
  std::string shape = "(";
  for (size_t i = 0; i < tensor.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(tensor.shape[i]);
  shape += tensor.shape.size() == 1 ? ",)" : ")";
  // {'descr': '<f4', 'fortran_order': False, 'shape': (256, 784), } padded with
  // spaces and ended by a newline so that magic + header is a multiple of 64.
  const char* descr = tensor.type == ExportType::kInt64 ? "<i8" : "<f4";
  std::string dict =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  const size_t prefix = 6 + 2 + 2;
  size_t total = prefix + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(1);
  out.push_back(0);
  PutLe(&out, dict.size(), 2);
  out += dict;
  AppendData(&out, tensor);
  return out;
}

Status EncodeNpz(const std::vector<ExportTensor>& tensors, std::string* out) {
  out->clear();
  std::string central;
  const uint64_t kMax = std::numeric_limits<uint32_t>::max();
  for (const auto& t : tensors) {
    std::string name = t.name + ".npy";
    std::string npy = EncodeNpy(t);
    if (npy.size() >= kMax || out->size() >= kMax)
      return Status::InvalidArgument("tensor '" + t.name +
                                     "': the .npz would pass 4 GiB (zip64 is not written)");
    uint32_t crc = Crc32(npy.data(), npy.size());
    uint64_t local_offset = out->size();
    auto common = [&](std::string* h) {  // version needed .. name length, shared by both headers
      PutLe(h, 20, 2);                   // version needed to extract: 2.0
      PutLe(h, 0, 2);                    // flags
      PutLe(h, 0, 2);                    // method: stored
      PutLe(h, kDosTime, 2);
      PutLe(h, kDosDate, 2);
      PutLe(h, crc, 4);
      PutLe(h, npy.size(), 4);  // compressed size
      PutLe(h, npy.size(), 4);  // uncompressed size
      PutLe(h, name.size(), 2);
      PutLe(h, 0, 2);  // extra field length
    };
    PutLe(out, 0x04034b50, 4);
    common(out);
    *out += name;
    *out += npy;
    PutLe(&central, 0x02014b50, 4);
    PutLe(&central, 20, 2);  // version made by
    common(&central);
    PutLe(&central, 0, 2);  // comment length
    PutLe(&central, 0, 2);  // disk number
    PutLe(&central, 0, 2);  // internal attributes
    PutLe(&central, 0, 4);  // external attributes
    PutLe(&central, local_offset, 4);
    central += name;
  }
  if (tensors.size() > 0xffff || out->size() + central.size() >= kMax)
    return Status::InvalidArgument("the .npz would pass zip's limits (65535 entries, 4 GiB)");
  uint64_t central_offset = out->size();
  *out += central;
  PutLe(out, 0x06054b50, 4);
  PutLe(out, 0, 2);  // this disk
  PutLe(out, 0, 2);  // disk with the central directory
  PutLe(out, tensors.size(), 2);
  PutLe(out, tensors.size(), 2);
  PutLe(out, central.size(), 4);
  PutLe(out, central_offset, 4);
  PutLe(out, 0, 2);  // comment length
  return Status::Ok();
}

Status EncodeSafetensors(const std::vector<ExportTensor>& tensors,
                         const std::map<std::string, std::string>& metadata, std::string* out) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    if (header.contains(t.name)) return Status::InvalidArgument("tensor '" + t.name + "' twice");
    const uint64_t bytes = DataBytes(t);
    header[t.name] = {{"dtype", t.type == ExportType::kInt64 ? "I64" : "F32"},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  out->clear();
  out->reserve(8 + text.size() + offset);
  PutLe(out, text.size(), 8);
  *out += text;
  for (const auto& t : tensors) AppendData(out, t);
  return Status::Ok();
}

Status ExportCheckpoint(const Checkpoint& merged, const std::string& path, ExportFormat format,
                        bool with_state, nlohmann::json* report) {
  std::vector<ExportTensor> tensors;
  SHOAL_RETURN_IF_ERROR(ExportTensors(merged, with_state, &tensors));
  std::string bytes;
  if (format == ExportFormat::kNpz) {
    SHOAL_RETURN_IF_ERROR(EncodeNpz(tensors, &bytes).Within("'" + path + "'"));
  } else {
    std::map<std::string, std::string> metadata = {{"format", "shoal-export"},
                                                   {"plan_hash", merged.plan_hash},
                                                   {"step", std::to_string(merged.step)},
                                                   {"created_by", BuildCommit()}};
    SHOAL_RETURN_IF_ERROR(EncodeSafetensors(tensors, metadata, &bytes).Within("'" + path + "'"));
  }
  SHOAL_RETURN_IF_ERROR(WriteFileAtomic(path, bytes));
  nlohmann::json list = nlohmann::json::array();
  for (const auto& t : tensors) list.push_back({{"name", t.name}, {"shape", t.shape}});
  *report = {{"path", path},          {"format", format == ExportFormat::kNpz ? "npz" : "safetensors"},
             {"step", merged.step},   {"plan_hash", merged.plan_hash},
             {"bytes", bytes.size()}, {"tensors", list}};
  return Status::Ok();
}

}  // namespace shoal
