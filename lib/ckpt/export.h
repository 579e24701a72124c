// Exporting a merged checkpoint for other tools: NumPy's .npz (a zip of .npy
// files, stored uncompressed) or safetensors. Values only unless asked; each
// tensor named by its parameter ("fc1.weight"; the updater's state
// "fc1.weight@velocity", "fc1.weight@exp_avg", ...), float32, shaped as the
// parameter. A batch norm's running averages come with PyTorch's
// "<layer>.num_batches_tracked", an int64 scalar: the checkpoint's step.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "core/status.h"

namespace shoal {

enum class ExportFormat { kNpz, kSafetensors };

// `name` "npz" | "safetensors", or empty: from `path`'s extension.
// InvalidArgument, *format unchanged, for another name or extension.
Status ChooseExportFormat(const std::string& name, const std::string& path, ExportFormat* format);

enum class ExportType { kFloat32, kInt64 };

struct ExportTensor {
  std::string name;
  std::vector<int> shape;
  const std::vector<float>* data = nullptr;  // kFloat32's values
  ExportType type = ExportType::kFloat32;
  int64_t integer = 0;  // kInt64's one value (shape {}): a counter
};

// The tensors to export from a merged checkpoint (every tensor whole), and
// num_batches_tracked after each batch norm's running_var. `with_state`: the
// updater's state too. InvalidArgument for a server's slices (merge them
// first) or a checkpoint without values; Corruption for a tensor not whole.
// *tensors may be part-filled on error.
Status ExportTensors(const Checkpoint& merged, bool with_state, std::vector<ExportTensor>* tensors);

// One .npy file (format 1.0): magic, version, header dict padded to 64 bytes, data.
std::string EncodeNpy(const ExportTensor& tensor);
// A zip archive of "<name>.npy" entries, stored (no compression), CRC-32 each.
// InvalidArgument, *out part-written, when the archive would need zip64.
Status EncodeNpz(const std::vector<ExportTensor>& tensors, std::string* out);
// u64 little-endian header length | JSON header (padded with spaces to a
// multiple of 8) | data. `metadata` goes into the header's "__metadata__".
// InvalidArgument, *out unchanged, for a tensor name that comes twice.
Status EncodeSafetensors(const std::vector<ExportTensor>& tensors,
                         const std::map<std::string, std::string>& metadata, std::string* out);

// Writes `merged` to `path` atomically; `report` says what was written.
// Returns the errors of ExportTensors, the encoder (naming `path`) and
// WriteFileAtomic; *report and `path` are unchanged then.
Status ExportCheckpoint(const Checkpoint& merged, const std::string& path, ExportFormat format,
                        bool with_state, nlohmann::json* report);

}  // namespace shoal
