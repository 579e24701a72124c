// dl-plan's search: for a job and a cluster profile, the partitioning of
// every layer (data, model or none), the group size M and number of groups
// for a node budget of N workers, and the servers, minimising the predicted
// time of a step; with what all-data and all-model would cost beside it, and
// the user's overrides (partition_dim, location) honoured.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/job.h"
#include "plan/cluster_profile.h"
#include "plan/cost_model.h"
#include "plan/plan.h"

namespace shoal {

struct PlannerOptions {
  Strategy strategy = Strategy::kOptimal;
  Exchange exchange = Exchange::kJob;  // BuildPlan writes the choice into the job
  int workers = 0;                     // N; 0: the job's workers (another N: ResizeJob)
  int servers = 0;                     // S; 0: the job's (PlanJob fills it in; PlanLayers needs one)
  int group_size = 0;  // M; 0: the planner chooses (optimal), 1 (data), the job's group (model)
  // The job's groups of workers (nworkers_per_group): they run asynchronously
  // to each other, so a planned group lies within one (M divides it); 0: N.
  int job_group = 0;
  ClusterProfile profile;
  double param_value_bytes = 4.0;  // a gradient or value on the wire; PlanJob takes the job's cluster.wire
  // As the workers execute the job (PlanJob takes them from it): parameter
  // traffic overlapped with compute (train.overlap; never under EASGD), and
  // exchanges per step (EASGD: one every easgd_tau steps).
  bool overlap = true;
  double bucket_floats = 1 << 18;  // Grouping::bucket_floats (train.overlap_bucket_floats)
  double exchanges_per_step = 1.0;
  int staleness = 0;           // Grouping::staleness: BSP 0, SSP its slack, async and EASGD -1
  ServerWork server_work;      // Grouping::server_work: the job's updater, consistency and server groups
  bool bound_servers = false;  // cluster.server_worker_separate: false
};

// A user's fixed choice for a layer.
struct LayerOverride {
  bool has_partition = false;
  Choice choice = Choice::kData;
  int rank = -1;  // location: the worker of the group holding an unpartitioned layer; -1: none given
};

// A whole plan's cost.
struct PlanTotals {
  int group_size = 1, groups = 1;
  double seconds = 0.0;  // per step, as the workers run it (StepSeconds)
  LayerCost cost;        // the layers' costs summed
};

struct PartitionReport {
  Strategy strategy = Strategy::kOptimal;
  ClusterProfile profile;
  Grouping grouping;  // of the chosen plan, servers included
  std::vector<LayerFacts> layers;
  std::vector<LayerOverride> overrides;
  std::vector<Choice> choices;
  std::vector<int> ranks;  // where each unpartitioned layer lives
  std::vector<LayerCost> costs;
  PlanTotals chosen;                      // what is written: the strategy with the overrides honoured
  PlanTotals optimum;                     // the free optimum, overrides ignored
  PlanTotals all_data;                    // every layer data parallel (M = 1)
  PlanTotals all_model;                   // every layer model parallel, one group of N (of the job's group)
  std::string syncing;                    // a layer that sums over every worker's batch: groups of one only
  std::vector<PlanTotals> by_group_size;  // the best plan for each M tried
  size_t max_states = 0;
  bool has_overrides = false;
  int advised_servers = 0;  // a server group's fewest whose step is within 1% of one a node's
  // With --exchange: each exchange tried and its step (the chosen plan's).
  std::vector<std::pair<std::string, double>> exchanges;

  // Whether all_model's one group of every worker can run (a synced layer needs groups of one).
  bool AllModelRuns() const { return syncing.empty() || all_model.group_size == 1; }
};

// The job on `workers` workers (0: its own), as SINGA scales it: the step's mini-batch
// (train.batch_size × the job's workers) and the number of worker groups
// kept; refused naming both when they do not divide. Every refusal is
// InvalidArgument naming the job file; *resized is a copy of the job then.
Status ResizeJob(const JobConfig& job, int workers, JobConfig* resized);

// The job exchanging parameters through servers of their own (`allreduce`
// false) or a server with every worker (true: nservers_per_group set to match).
// InvalidArgument where the workers do not divide into the server groups.
Status WithExchange(const JobConfig& job, bool allreduce, JobConfig* out);

// The job with `servers` servers of their own in each server group (--servers).
// InvalidArgument under AllReduce, or for more than 16384 servers in all.
Status WithServers(const JobConfig& job, int servers, JobConfig* out);

// Plans a built job (on options.workers, ResizeJob) with the servers it runs
// (options.servers, else the job's). Errors name the job file and the layer or field.
// They are InvalidArgument, or Net::Build's; *report is part-filled then.
Status PlanJob(const JobConfig& job, const PlannerOptions& options, PartitionReport* report);

// All of dl-plan: plans `job` (PlanJob) and writes the plan of the
// partition chosen, with the planner's report in it. Returns the errors of
// ResizeJob, WithExchange, WithServers, PlanJob and MakePlan; under
// Exchange::kAuto an exchange the job cannot take is skipped, not an error.
Status BuildPlan(const JobConfig& job, const PlannerOptions& planner, const PlanOptions& options,
                 PartitionReport* report, Plan* plan);

// The same from layer facts: `batch` is B, `overrides` one per layer (may be
// default), `where` names the source in messages. InvalidArgument for
// inputs the planner cannot honour, a graph too wide to search, or a step
// that takes forever; *report is part-filled then.
Status PlanLayers(const std::vector<LayerFacts>& layers, const std::vector<LayerOverride>& overrides,
                  int batch, const PlannerOptions& options, const std::string& where,
                  PartitionReport* report);

// The cost of fixed choices under a grouping (a test and reporting aid).
PlanTotals EvaluateChoices(const std::vector<LayerFacts>& layers, const std::vector<Choice>& choices,
                           const std::vector<int>& ranks, const Grouping& g, const ClusterProfile& p);

// plan.json's "planner" section, and the table --explain prints.
nlohmann::json ReportToJson(const PartitionReport& report);
std::string ExplainReport(const PartitionReport& report);

}  // namespace shoal
