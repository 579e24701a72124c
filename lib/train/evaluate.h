// Evaluating a trained model without training: dl-worker --eval-only.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ckpt/checkpoint.h"
#include "core/status.h"
#include "layers/layer.h"
#include "plan/plan.h"

namespace shoal {

// Fills each of `params` from the merged checkpoint's value of the same name.
// Refuses a parameter the checkpoint lacks, one of another shape, and a
// checkpoint parameter the net lacks, naming it; `source` names the checkpoint.
Status FillParamsFromCheckpoint(const Checkpoint& merged, const std::string& source,
                                const std::vector<Param*>& params);

struct EvalOptions {
  std::vector<std::string> checkpoint;  // a merged file, one step's server files, or a directory
  int64_t step = -1;                    // with a directory: this step instead of the newest complete
  std::string shard_dir;                // overrides the job's data.shards when set
  int threads = 1;
};

// Builds the plan's net, loads the checkpoint into it and evaluates it on the
// test shard: {"event":"eval","test_accuracy","test_loss","step","checkpoint","files"}.
Status EvaluateCheckpoint(const Plan& plan, const EvalOptions& options, nlohmann::json* record);

}  // namespace shoal
