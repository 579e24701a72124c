// A server's checkpoint: its slices of the parameter table and the updater's
// state, at one version.
//
// File: magic "SHOALCKP" | u32 format version | u64 header bytes | header
// (JSON: plan hash, server, servers, step, metric, tensors with offset,
// count and CRC-32) |
// u32 CRC-32 of the header | tensor data (float32, little-endian).
// Written atomically (temporary file, fsync, rename), so a crash at any
// point leaves the previous checkpoint whole.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace shoal {

// The most servers a checkpoint may name (its id, its run's count).
inline constexpr uint64_t kMaxCheckpointServers = 1u << 16;

// The roles a tensor may have: "value", or a state an updater keeps
// (config/choices.h's UpdaterStateNames, which a test holds to this list).
bool IsTensorRole(const std::string& role);

struct CheckpointTensor {
  std::string name;  // "<param>", or "<param>@<state>" for the updater's state
  std::string param;
  std::string role;     // "value", or a state name of the updater (ps/updater.h): "velocity", "exp_avg", ...
  uint32_t key = 0;     // slice key in the plan
  uint64_t offset = 0;  // floats into the parameter
  std::vector<int> shape;  // the whole parameter's
  std::vector<float> data;
};

struct Checkpoint {
  std::string plan_hash;
  int server = 0;        // -1: a merged checkpoint (whole parameters, dl-ckpt merge)
  int servers = 0;       // servers in the plan; 0: unknown (written before it was recorded)
  uint64_t step = 0;     // parameter version: updates applied so far (BSP: steps; EASGD: exchanges)
  uint64_t updates = 0;  // worker updates (EASGD: exchanges) received
  // Per worker: the step each resumes at (async, SSP: its updates taken in,
  // which is also SSP's clock; EASGD: the step after its last exchange).
  std::vector<uint64_t> updates_from;
  // The last evaluation reported to the server before this checkpoint, e.g.
  // {"step": 1800, "test_accuracy": 0.86, "test_loss": 0.39}; null if none.
  nlohmann::json metric;
  std::vector<CheckpointTensor> tensors;
};

// Writes `ckpt` to `path` with WriteFileAtomic, and returns its error.
Status WriteCheckpoint(const std::string& path, const Checkpoint& ckpt);
// Reads and verifies every checksum; an error names the tensor and its bytes.
// Returns IOError when `path` cannot be opened and InvalidArgument for a
// directory or a header field out of range. A bad magic, version or checksum,
// a truncated file or bytes after the data are Corruption. *ckpt may be
// part-filled on error.
Status ReadCheckpoint(const std::string& path, Checkpoint* ckpt);
// The header alone, as written (for inspection without loading tensors).
// Returns IOError when `path` cannot be opened, InvalidArgument for a
// directory, and Corruption when its preamble or header does not verify.
Status ReadCheckpointHeader(const std::string& path, nlohmann::json* header);

// "<dir>/server-<id>-step-<step>.ckpt", zero-padded so names sort by step.
std::string CheckpointPath(const std::string& dir, int server, uint64_t step);
// The checkpoints of `server` in `dir`, oldest first.
std::vector<std::string> ListCheckpoints(const std::string& dir, int server);
// Whether file `name` is the temporary file of a checkpoint write that never
// finished (WriteCheckpoint's "<name>.ckpt.tmp.*"); of server `server`'s
// writes only when it is not -1.
bool IsUnfinishedCheckpoint(const std::string& name, int server = -1);
// The newest checkpoint of every server that has one in `dir`.
std::vector<std::string> LatestCheckpoints(const std::string& dir);

}  // namespace shoal
