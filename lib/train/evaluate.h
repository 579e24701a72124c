// Feeding a net and evaluating it on a test shard: during training (worker 0)
// and without it (dl-worker --eval-only).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "core/status.h"
#include "data/shard.h"
#include "graph/net.h"
#include "layers/layer.h"
#include "plan/plan.h"
#include "train/batch_loader.h"

namespace shoal {

// Shapes the net for the batch and puts its records and labels in the data layer.
void FeedBatch(const Batch& batch, Net* net);

// How a job's records become its net's input: an image's through the job's
// data section (lib/data/augment.h), for training and for evaluation; a
// text's as they are.
struct InputFeeds {
  std::unique_ptr<Augmenter> train, eval;  // null for a text
  Shape shape;                             // what a record becomes
  size_t floats() const;
  RecordFeed Training() const { return RecordFeed(train.get(), floats()); }
  RecordFeed Evaluation() const { return RecordFeed(eval.get(), floats()); }
};
// The feeds of `job` over records as `manifest` describes them;
// InvalidArgument where the data section does not fit the records. *out may
// then hold default Augmenters.
Status MakeInputFeeds(const JobConfig& job, const Manifest& manifest, InputFeeds* out);

// The checks that tie a plan's net to the data it will read: the input's
// shape (InputFeeds::shape) and the number of classes (a classifier's).
// InvalidArgument naming the manifest where either does not fit.
Status CheckShardsFitNet(const Shape& input, const Manifest& manifest, const std::string& dir, Net* net);

struct EvalResult {
  bool classifies = true;  // false for a loss without classes (an RBM's): no accuracy
  double accuracy = 0.0;
  double loss = 0.0;
  long long records = 0;
  // {"<set>_loss"}, with "<set>_accuracy" where the net classifies ("test" or "val").
  nlohmann::json Metric(const std::string& set = "test") const;
};
// Runs the net over every record of `test` (test phase), in batches of up to
// 500 records (fewer where their features would pass 128 MiB), and leaves it shaped
// for batches of `restore_batch` records again (0: as evaluation left it).
// A net that carries state (a GRU with carry_state) reads the test records as
// 32 streams, its state carried from batch to batch as in training (the last
// records mod 32 left out), and forgets it before and after. Returns a
// record's read errors, and InvalidArgument for a shard of no records; after a
// read error the net keeps the evaluation's shape and state, and *result is untouched.
Status EvaluateOnShard(Net* net, const ShardReader* test, const RecordFeed& feed, int restore_batch,
                       EvalResult* result);

// Fills each of `params` from the merged checkpoint's value of the same name.
// Refuses a parameter the checkpoint lacks, one of another shape, and a
// checkpoint parameter the net lacks, naming it; `source` names the checkpoint.
// The refusal is InvalidArgument; the params before the one refused are filled then.
Status FillParamsFromCheckpoint(const Checkpoint& merged, const std::string& source,
                                const std::vector<Param*>& params);

// A plan's net holding a checkpoint's parameters, and the manifest of the
// shards it was checked to fit: what evaluating or sampling a checkpoint starts from.
struct CheckpointNet {
  std::unique_ptr<Net> net;
  std::string source;  // the checkpoint as messages name it
  uint64_t step = 0;
  std::vector<std::string> files;
  std::string shard_dir;
  Manifest manifest;
  InputFeeds feeds;
  Precision compute = Precision::kFp32;  // the job's, or fp32 where this CPU cannot compute bf16
};
// Loads `checkpoint` (a merged file, one step's server files, or a directory:
// its newest complete step, or `step` when not -1) into the plan's net, with
// `threads` compute threads in the job's precision (fp32 in place of a bf16
// this CPU cannot compute), and the manifest of `shard_dir` (empty: the job's data.shards).
// Returns the errors of LoadModel, Net::Build, FillParamsFromCheckpoint,
// LoadManifest, MakeInputFeeds and CheckShardsFitNet, and InvalidArgument where
// there is no shard directory; *out is part-filled then.
Status OpenCheckpointNet(const Plan& plan, const std::vector<std::string>& checkpoint, int64_t step,
                         const std::string& shard_dir, int threads, CheckpointNet* out);

struct EvalOptions {
  std::vector<std::string> checkpoint;  // a merged file, one step's server files, or a directory
  int64_t step = -1;                    // with a directory: this step instead of the newest complete
  std::string shard_dir;                // overrides the job's data.shards when set
  int threads = 1;
};

// Builds the plan's net, loads the checkpoint into it and evaluates it on the
// test shard: {"event":"eval","test_accuracy","test_loss","step","checkpoint","files","compute"}.
// Returns the errors of OpenCheckpointNet, ShardReader::Open and
// EvaluateOnShard; *record is untouched then.
Status EvaluateCheckpoint(const Plan& plan, const EvalOptions& options, nlohmann::json* record);

}  // namespace shoal
