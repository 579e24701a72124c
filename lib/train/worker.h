// dl-worker's core: trains its part of the plan by back-propagation, in
// three parts: SetUp (its group's channel, its part of the net, its shards,
// its parameter table, and where to begin), the step loop, and what it
// reports (progress, evaluations, the end).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "comm/group_channel.h"
#include "core/output.h"
#include "data/shard.h"
#include "graph/net.h"
#include "net/partitioned_net.h"
#include "plan/plan.h"
#include "train/batch_loader.h"
#include "train/carried_state.h"
#include "train/evaluate.h"
#include "train/param_table.h"

namespace shoal {

struct WorkerOptions {
  int id = 0;                // global worker id in the plan
  std::string shard_dir;     // overrides the job's data.shards when set
  bool standalone = false;   // update locally; no servers
  int threads = 1;           // compute threads (ops/blas.h)
  bool evaluate = true;      // evaluate on the test shard at the end (worker 0 only by default)
  int steps = 0;             // overrides the job's steps when > 0
  int timeout_ms = 0;        // overrides the job's cluster.timeout_ms when > 0
  int slow_ms = 0;           // sleeps this long each step: a slow worker on purpose (tests, experiments)
  uint64_t incarnation = 1;  // this life of the worker (lib/core/process.h): every request carries it
  std::string state_dir;     // where a net that carries state (carry_state) keeps it, step by step, so that
                             // a restart mid-pass goes on exactly (lib/train/carried_state.h); "": nowhere
};

struct WorkerResult {
  long long steps = 0;
  double final_loss = 0.0;
  double test_accuracy = -1.0;  // -1: not evaluated
  double ms_per_step_median = 0.0;
};

// One dl-worker process's training of its part of the plan.
class Worker {
 public:
  Worker(const Plan& plan, WorkerOptions options, Output* output);
  // Returns the first error of setting up, training or finishing; *result
  // then holds what the run had reached (steps is set only at the end).
  Status Run(WorkerResult* result);

 private:
  using Clock = std::chrono::steady_clock;
  // Bytes of training traffic so far, by kind (dl-plan's names).
  struct ByteCounts {
    uint64_t params_out = 0, params_in = 0, features_in = 0, features_out = 0;
  };

  Status SetUp();
  Status OpenShards();
  // Shapes the net's features for the batch; IOError naming the batch and
  // the bytes where memory runs out.
  Status AllocateFeatures();
  // Whether a progress record follows `step` (every display_every, and the last).
  bool DisplaysAfter(long long step) const;
  Status OpenTable();
  // GeePS's memory manager over a device of train.device_memory_mb.
  Status OpenDeviceMemory(int timeout_ms);
  Status Train(WorkerResult* result);
  // Both passes of one step on batch `b`, then the table's exchange.
  Status Step(long long step, const Batch& b);
  // The carried state a restart's first step starts from, where it is mid-pass.
  Status RestoreState(long long step);
  // The progress record of the display window ending after step `step`.
  Status Display(long long step, WorkerResult* result);
  // What a run that does not learn should try, naming its rate and consistency.
  std::string TrainingAdvice() const;
  // Stops a run whose loss stays at a uniform guess's (train.divergence_check).
  Status CheckLearning(long long step, double window_loss);
  // Whether CheckLearning judges this net: train.divergence_check on, and classes to guess among.
  bool ChecksLearning() const;
  // Worker 0's evaluation of the parameters after `step` steps on the test shard.
  // Evaluates the parameters of `step` on the validation set during training
  // (train.eval_on: val, where the shards have one), on the test set at the end (`final`).
  // data.loader_threads, or the cores the compute threads leave (at least 1).
  int LoaderThreads() const;
  Status Evaluate(long long step, bool final, nlohmann::json* record, WorkerResult* result);
  // Whether worker 0 asks for a checkpoint set before `step` now
  // (train.checkpoint_seconds): the first time or tenth of the run since the last.
  bool CheckpointDue(long long step) const;
  // Asks every server for a checkpoint set at a version none has reached:
  // under BSP the one after `step`; elsewhere ask_ahead_ past the newest
  // version the servers answer a first ask (at 0) with. Where a server had
  // passed it by the second ask, the ask is made again before the next step,
  // twice as far ahead (the servers below it still write theirs: a partial set).
  Status AskCheckpoint(long long step);
  Status Finish(WorkerResult* result);
  ByteCounts Counts() const;
  double SecondsSince(Clock::time_point t) const;

  const Plan& plan_;
  WorkerOptions options_;
  Output* output_;
  int workers_ = 1;
  int batch_ = 0;
  long long steps_ = 0;
  uint64_t first_step_ = 0;
  bool evaluates_ = false;

  std::unique_ptr<GroupChannel> channel_;
  std::unique_ptr<PartitionedNet> net_;  // what this worker computes
  // A layer of net_ that carries state between batches (then the batches are
  // streams: lib/train/batch_loader.h), or "".
  std::string state_carrier_;
  std::unique_ptr<CarriedStateFiles> state_files_;  // where net_'s carried state is kept (options_.state_dir)
  std::vector<Param*> params_;                      // net_'s, in its order: what the table exchanges
  std::unique_ptr<Net> whole_;                      // the whole net, for evaluation
  std::vector<std::unique_ptr<ShardReader>> shards_;  // its training shards until the loader takes them
  std::vector<uint64_t> shard_numbers_;               // their numbers in the manifest
  uint64_t dealt_shards_ = 1;                         // the manifest's train shards
  uint64_t total_records_ = 0;
  InputFeeds feeds_;  // how records become the net's input
  std::unique_ptr<ShardReader> test_;
  std::unique_ptr<ShardReader> val_;  // evaluated on during training (train.eval_on: val), where there is one
  std::unique_ptr<ParamTable> table_;
  RemoteTable* remote_ = nullptr;  // the servers, when there are any
  LayerHooks* hooks_ = nullptr;    // with train.overlap: the table, beside every layer's passes
  // train.device_memory_mb or train.device: the device the training passes
  // run on, (a GPU's) the ops that compute there, and its memory manager;
  // both of these hold memory of the device, so they go first.
  std::unique_ptr<Device> device_;
  std::unique_ptr<GpuOps> gpu_ops_;
  std::unique_ptr<StepMemory> device_memory_;

  // The step loop's reporting.
  Clock::time_point start_;
  std::vector<double> step_ms_;
  std::vector<PartitionedNet::LayerTime>
      first_step_layers_;  // the layers' times after this life's first step
  double window_loss_ = 0.0;
  int window_ = 0;
  Clock::time_point last_display_;
  bool asks_checkpoints_ = false;  // train.checkpoint_seconds applies to this worker
  Clock::time_point last_checkpoint_;
  long long last_checkpoint_step_ = 0;
  uint64_t ask_ahead_ = 0;  // how far past the servers' versions an ask goes (not under BSP)
  long long last_display_step_ = 0;
  ByteCounts window_bytes_;
  // Time spent evaluating is not training time: time-to-accuracy curves
  // plot accuracy against train_seconds.
  double eval_seconds_ = 0.0;
  // Where the steps' time went (the done record's time_s): waiting for
  // batches, the steps themselves, and in them the parameter traffic; so
  // far, and after this life's first step.
  struct StepTimes {
    double input = 0.0, steps = 0.0;
    RemoteTable::Busy busy;
  };
  StepTimes times_, first_step_times_;
  // train.divergence_check: displays in a row at a uniform guess's loss, since which step.
  // Runs shorter than this are too short for CheckLearning to judge.
  static constexpr long long kShortestJudged = 30;
  int stuck_displays_ = 0;
  long long stuck_since_ = 0;
};

}  // namespace shoal
