// dl-worker's core: trains its part of the plan by back-propagation.
#pragma once

#include <memory>
#include <string>

#include "graph/net.h"
#include "net/partitioned_net.h"
#include "plan/plan.h"
#include "train/param_table.h"
#include "train/progress.h"

namespace shoal {

struct WorkerOptions {
  int id = 0;                // global worker id in the plan
  std::string shard_dir;     // overrides the job's data.shards when set
  bool standalone = false;   // update locally; no servers
  int threads = 1;           // compute threads (OpenBLAS)
  bool evaluate = true;      // evaluate on the test shard at the end (worker 0 only by default)
  int steps = 0;             // overrides the job's steps when > 0
  int timeout_ms = 0;        // overrides the job's cluster.timeout_ms when > 0
  int slow_ms = 0;           // sleeps this long each step: a slow worker on purpose (tests, experiments)
};

struct WorkerResult {
  long long steps = 0;
  double final_loss = 0.0;
  double test_accuracy = -1.0;  // -1: not evaluated
  double ms_per_step_median = 0.0;
};

class Worker {
 public:
  Worker(const Plan& plan, WorkerOptions options, Progress* progress);
  Status Run(WorkerResult* result);

 private:
  const Plan& plan_;
  WorkerOptions options_;
  Progress* progress_;
  std::unique_ptr<PartitionedNet> net_;  // what this worker computes
  std::unique_ptr<Net> whole_;           // the whole net, for evaluation
};

}  // namespace shoal
