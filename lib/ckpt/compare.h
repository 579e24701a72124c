// What dl-ckpt reports about checkpoints: summaries and differences.
#pragma once

#include <nlohmann/json.hpp>

#include "ckpt/checkpoint.h"

namespace shoal {

// Step, plan, server (and the plan's server count), the recorded metric, and
// per tensor: role, shape, count, L2 norm.
nlohmann::json SummarizeCheckpoint(const std::string& path, const Checkpoint& ckpt);

// Per tensor present in both: max absolute and max relative difference
// (relative to max(|a|, |b|) over the tensor); tensors in only one are listed.
nlohmann::json DiffCheckpoints(const Checkpoint& a, const Checkpoint& b);

}  // namespace shoal
