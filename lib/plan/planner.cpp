#include "plan/planner.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>

#include "comm/message.h"
#include "config/fields.h"
#include "graph/net.h"

namespace shoal {
namespace {

using nlohmann::json;

constexpr uint8_t kAll = 0b111;
uint8_t Only(Choice c) { return static_cast<uint8_t>(1u << static_cast<int>(c)); }

// The choices a layer may take: what the workers can execute.
uint8_t Allowed(const LayerFacts& l) {
  if (l.rows_only) return Only(Choice::kData);
  return l.splittable ? kAll : static_cast<uint8_t>(kAll & ~Only(Choice::kModel));
}

// Reads partition_dim and location where the user wrote them (a default
// partition_dim of 0 is the planner's to choose).
Status ReadOverrides(const JobConfig& job, const std::vector<LayerFacts>& layers,
                     std::vector<LayerOverride>* out) {
  std::map<std::string, const LayerConfig*> config;
  for (const auto& c : job.layers) config[c.name] = &c;
  for (const auto& layer : layers) {
    const LayerConfig& c = *config.at(layer.name);
    Fields f(c.fields, job.origin, c.pointer, "layer '" + c.name + "'");
    LayerOverride o;
    if (f.Has("partition_dim")) {
      o.has_partition = true;
      o.choice = c.partition_dim == 0 ? Choice::kData : c.partition_dim == 1 ? Choice::kModel : Choice::kNone;
    }
    if (!c.location.empty()) {
      char* end = nullptr;
      long rank = std::strtol(c.location.c_str(), &end, 10);
      if (*end != '\0' || rank < 0)
        return f.FieldError("location",
                            "is '" + c.location + "', not a worker rank within the group (0, 1, ...)");
      if (o.has_partition && o.choice != Choice::kNone)
        return f.FieldError("location",
                            "places an unpartitioned layer on one worker; it cannot be honoured with "
                            "partition_dim " +
                                std::to_string(c.partition_dim) + " (use -1)");
      o.has_partition = true;
      o.choice = Choice::kNone;
      o.rank = static_cast<int>(rank);
    }
    out->push_back(o);
  }
  return Status::Ok();
}

Status CheckOverrides(const std::vector<LayerFacts>& layers, const std::vector<LayerOverride>& overrides,
                      const PlannerOptions& options, int workers, const std::string& where) {
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerOverride& o = overrides[i];
    if (!o.has_partition) continue;
    const std::string layer = where + ": layer '" + layers[i].name + "'";
    if (layers[i].rows_only && o.choice != Choice::kData)
      return Status::InvalidArgument(
          layer + ": partition_dim " + std::to_string(PartitionDim(o.choice)) + " cannot be honoured: " +
          (layers[i].is_input ? "the data layer is read from the shards by records"
                              : "the loss is computed where its records' labels are") +
          " (partition_dim 0)");
    if (o.choice == Choice::kModel && !layers[i].splittable)
      return Status::InvalidArgument(layer + ": partition_dim 1 cannot be honoured: a " + layers[i].type +
                                     " layer cannot split its features over workers (partition_dim 0 or -1)");
    if (o.rank >= workers)
      return Status::InvalidArgument(layer + ": location " + std::to_string(o.rank) +
                                     " cannot be honoured: a group of " + std::to_string(workers) +
                                     " workers has ranks 0 to " + std::to_string(workers - 1));
    if (options.strategy == Strategy::kData && o.choice != Choice::kData)
      return Status::InvalidArgument(layer + ": partition_dim " + std::to_string(PartitionDim(o.choice)) +
                                     " cannot be honoured with --strategy data (every layer on 0)");
    if (options.strategy == Strategy::kModel && o.choice != Choice::kModel && layers[i].splittable)
      return Status::InvalidArgument(layer + ": partition_dim " + std::to_string(PartitionDim(o.choice)) +
                                     " cannot be honoured with --strategy model (every layer on 1)");
  }
  return Status::Ok();
}

// The step's mini-batch (train.batch_size x the job's workers, fixed
// whatever the workers) gives every worker at least one record.
Status CheckRecordsPerWorker(int workers, int batch, const std::string& where) {
  if (workers <= batch) return Status::Ok();
  return Status::InvalidArgument(where + ": " + std::to_string(workers) +
                                 " workers but a step's mini-batch has " + std::to_string(batch) +
                                 " records (train.batch_size x the job's workers): every worker needs one");
}

// A step's mini-batch: train.batch_size x the job's workers (each may be
// large, so their product is checked).
Status StepRecords(const JobConfig& job, int* records) {
  const int64_t step = static_cast<int64_t>(job.train.batch_size) * job.cluster.workers();
  if (step > (int64_t{1} << 30))
    return Status::InvalidArgument(job.source + ": a step of " + std::to_string(step) +
                                   " records (train.batch_size x the job's workers) is more than 2^30");
  *records = static_cast<int>(step);
  return Status::Ok();
}

// Sets a field of the job's `section` and its resolved copy (what the plan writes) alike.
template <typename T>
void SetField(JobConfig* job, const char* section, const char* key, T* field, T value) {
  *field = value;
  job->resolved[section][key] = value;
}

std::vector<int> Divisors(int n) {
  std::vector<int> d;
  for (int m = 1; m <= n; ++m)
    if (n % m == 0) d.push_back(m);
  return d;
}

// The fewest servers a server group, of at most `slots` over all groups (one
// a node of the budget, or one a worker without one), whose predicted step is
// within 1% of the step with all of them: past it a server more, on a node of
// its own, buys nothing. Each server's share of the links and of the updates
// shrinks as servers are added, so the step shrinks with them, nearly always:
// a worker's lanes grow with its servers, and coarser lanes can hide less. The
// search halves as if it always did; what it returns is within 1% either way.
int ChooseServers(const std::vector<LayerFacts>& layers, const std::vector<Choice>& choices,
                  const std::vector<int>& ranks, Grouping g, int slots, const ClusterProfile& p) {
  const int groups = g.server_work.server_groups;
  auto seconds = [&](int per_group) {
    g.servers = per_group * groups;
    return EvaluateChoices(layers, choices, ranks, g, p).seconds;
  };
  int fewest = 1, most = std::max(1, slots / groups);
  const double enough = seconds(most) * 1.01;
  while (fewest < most) {
    const int middle = fewest + (most - fewest) / 2;
    if (seconds(middle) <= enough)
      most = middle;
    else
      fewest = middle + 1;
  }
  return fewest;
}

}  // namespace

PlanTotals EvaluateChoices(const std::vector<LayerFacts>& layers, const std::vector<Choice>& choices,
                           const std::vector<int>& ranks, const Grouping& g, const ClusterProfile& p) {
  PlanTotals t;
  t.group_size = g.group_size;
  t.groups = g.groups();
  const std::vector<LayerCost> costs = CostBreakdown(layers, choices, ranks, g, p);
  for (const auto& c : costs) t.cost.Add(c);
  t.seconds = StepSeconds(costs, g);
  return t;
}

namespace {

// The checks PlanLayers makes before it prices anything; sets the job's
// group of workers (the planned groups lie within one).
Status CheckPlanInputs(const std::vector<LayerFacts>& layers, const std::vector<LayerOverride>& overrides,
                       int batch, const PlannerOptions& options, const std::string& where, int* job_group) {
  const ClusterProfile& p = options.profile;
  const int n = options.workers;
  if (n < 1) return Status::InvalidArgument(where + ": the number of workers must be at least 1");
  if (p.nodes > 0 && p.WorkerNodes(n) > p.nodes)
    return Status::InvalidArgument(where + ": " + std::to_string(n) + " workers need " +
                                   std::to_string(p.WorkerNodes(n)) + " nodes of " +
                                   std::to_string(p.workers_per_node) + ", but the cluster profile '" +
                                   p.name + "' has " + std::to_string(p.nodes));
  SHOAL_RETURN_IF_ERROR(CheckRecordsPerWorker(n, batch, where));
  if (options.servers < 1) return Status::InvalidArgument(where + ": the number of servers must be positive");
  SHOAL_RETURN_IF_ERROR(CheckOverrides(layers, overrides, options, n, where));
  *job_group = options.job_group > 0 ? options.job_group : n;
  if (n % *job_group != 0)
    return Status::InvalidArgument(where + ": groups of " + std::to_string(*job_group) +
                                   " workers do not divide " + std::to_string(n));
  if (options.group_size < 0 || (options.group_size > 0 && *job_group % options.group_size != 0))
    return Status::InvalidArgument(where + ": groups of " + std::to_string(options.group_size) +
                                   " do not divide " +
                                   (*job_group == n ? std::to_string(n) + " workers"
                                                    : "the job's groups of " + std::to_string(*job_group) +
                                                          " workers (cluster.nworkers_per_group)"));
  return Status::Ok();
}

// What every grouping the planner prices shares (its group size is 1).
Grouping BaseGrouping(const std::vector<LayerFacts>& layers, int batch, const PlannerOptions& options) {
  Grouping base;
  base.workers = options.workers;
  base.batch = batch;
  base.servers = options.servers;
  base.param_value_bytes = options.param_value_bytes;
  base.overlap = options.overlap;
  base.bucket_floats = options.bucket_floats;
  base.exchanges_per_step = options.exchanges_per_step;
  base.staleness = options.staleness;
  base.bound_servers = options.bound_servers;
  base.server_work = options.server_work;
  base.step_compute_s = StepComputeSeconds(layers, base, options.profile);
  return base;
}

// Every layer that can take `c` takes it; the others are data parallel.
std::vector<Choice> Everywhere(const std::vector<LayerFacts>& layers, Choice c) {
  std::vector<Choice> v;
  for (const auto& l : layers) v.push_back(Allowed(l) & Only(c) ? c : Choice::kData);
  return v;
}

// A plan priced as run, and the grouping it runs on.
struct Candidate {
  std::vector<Choice> choices;
  Grouping grouping;
  PlanTotals totals;
};

// The optimal strategy: for each group size, the search's partition (free,
// and with the overrides honoured), ranked by the step as run (StepSeconds),
// which is what is reported. Each search minimises its graph, which prices
// overlap and the servers only approximately: the plans every layer of one
// kind are candidates too, so that the optimum is never slower than a plan
// the report shows beside it.
Status SearchGroupSizes(const std::vector<LayerFacts>& layers, const std::vector<LayerOverride>& overrides,
                        const Grouping& base, int job_group, const PlannerOptions& options,
                        const std::string& where, PartitionReport* report, Candidate* best) {
  const ClusterProfile& p = options.profile;
  std::vector<uint8_t> free_mask, honoured_mask;
  for (size_t i = 0; i < layers.size(); ++i) {
    free_mask.push_back(Allowed(layers[i]));
    honoured_mask.push_back(overrides[i].has_partition ? Only(overrides[i].choice) : free_mask.back());
  }
  const std::vector<int>& ranks = report->ranks;
  Candidate best_free;
  best_free.totals.seconds = best->totals.seconds = INFINITY;
  auto consider = [](Candidate c, Candidate* into) {
    if (c.totals.seconds < into->totals.seconds * (1 - 1e-12)) *into = std::move(c);
  };
  // Statistics summed over every worker (sync batch norm) need groups of one (MakePlan).
  const bool syncs = !report->syncing.empty();
  const std::vector<int> sizes = options.group_size > 0 ? std::vector<int>{options.group_size}
                                 : syncs                ? std::vector<int>{1}
                                                        : Divisors(job_group);
  for (int m : sizes) {
    Grouping g = base;
    g.group_size = m;
    SearchResult free_result, honoured_result;
    SHOAL_RETURN_IF_ERROR(
        SearchPartition(BuildCostGraph(layers, free_mask, ranks, g, p), &free_result).Within(where));
    report->max_states = std::max(report->max_states, free_result.max_states);
    const Candidate free{free_result.choices, g, EvaluateChoices(layers, free_result.choices, ranks, g, p)};
    consider(free, &best_free);
    bool ranks_fit = true;
    for (const auto& o : overrides) ranks_fit &= o.rank < m;
    if (!ranks_fit) continue;
    Candidate honoured = free;  // without overrides the honoured plan is the free one
    if (report->has_overrides) {
      SHOAL_RETURN_IF_ERROR(
          SearchPartition(BuildCostGraph(layers, honoured_mask, ranks, g, p), &honoured_result)
              .Within(where));
      honoured = {honoured_result.choices, g, EvaluateChoices(layers, honoured_result.choices, ranks, g, p)};
    }
    report->by_group_size.push_back(honoured.totals);
    consider(honoured, best);
  }
  if (options.group_size == 0) {
    Grouping singletons = base, one_group = base;
    one_group.group_size = job_group;
    std::vector<Candidate> candidates{{Everywhere(layers, Choice::kData), singletons, report->all_data}};
    if (!syncs)  // all-model is one group of them all
      candidates.push_back({Everywhere(layers, Choice::kModel), one_group, report->all_model});
    for (const Candidate& c : candidates) {
      consider(c, &best_free);
      if (!report->has_overrides) consider(c, best);
    }
  }
  report->optimum = best_free.totals;
  return Status::Ok();
}

}  // namespace

Status PlanLayers(const std::vector<LayerFacts>& layers, const std::vector<LayerOverride>& overrides,
                  int batch, const PlannerOptions& options, const std::string& where,
                  PartitionReport* report) {
  *report = PartitionReport();
  int job_group = 0;
  SHOAL_RETURN_IF_ERROR(CheckPlanInputs(layers, overrides, batch, options, where, &job_group));
  const ClusterProfile& p = options.profile;
  report->strategy = options.strategy;
  report->profile = p;
  report->layers = layers;
  report->overrides = overrides;
  for (const LayerOverride& o : overrides) {
    report->ranks.push_back(std::max(o.rank, 0));
    report->has_overrides |= o.has_partition;
  }
  for (const LayerFacts& l : layers)
    if (l.group_exchange.rounds > 0 && report->syncing.empty()) report->syncing = l.name;
  const std::vector<int>& ranks = report->ranks;
  const Grouping base = BaseGrouping(layers, batch, options);
  Grouping one_group = base;
  one_group.group_size = job_group;
  report->all_data = EvaluateChoices(layers, Everywhere(layers, Choice::kData), ranks, base, p);
  report->all_model = EvaluateChoices(layers, Everywhere(layers, Choice::kModel), ranks, one_group, p);

  Candidate chosen{{}, base, {}};
  if (options.strategy == Strategy::kData) {
    chosen.grouping.group_size = std::max(options.group_size, 1);
    chosen.choices = Everywhere(layers, Choice::kData);
    report->optimum = EvaluateChoices(layers, chosen.choices, ranks, chosen.grouping, p);
  } else if (options.strategy == Strategy::kModel) {
    chosen.grouping.group_size = options.group_size > 0 ? options.group_size : job_group;
    chosen.choices = Everywhere(layers, Choice::kModel);
    report->optimum = EvaluateChoices(layers, chosen.choices, ranks, chosen.grouping, p);
  } else {
    SHOAL_RETURN_IF_ERROR(
        SearchGroupSizes(layers, overrides, base, job_group, options, where, report, &chosen));
  }
  report->choices = chosen.choices;
  if (options.bound_servers) {
    chosen.grouping.servers = report->advised_servers = options.workers;  // one with every worker
  } else {
    // Advice: servers live inside the node budget, one a node (beside workers or on their own).
    report->advised_servers = ChooseServers(layers, report->choices, ranks, chosen.grouping,
                                            p.nodes > 0 ? p.nodes : options.workers, p);
  }
  report->grouping = chosen.grouping;
  report->costs = CostBreakdown(layers, report->choices, ranks, chosen.grouping, p);
  report->chosen = EvaluateChoices(layers, report->choices, ranks, chosen.grouping, p);
  if (!std::isfinite(report->chosen.seconds))
    return Status::InvalidArgument(where + ": the cluster profile '" + p.name +
                                   "' makes a step take forever");
  return Status::Ok();
}

Status ResizeJob(const JobConfig& job, int workers, JobConfig* resized) {
  *resized = job;
  const ClusterConfig& c = job.cluster;
  if (workers == 0 || workers == c.workers()) return Status::Ok();
  if (workers < 1 || workers > (1 << 16))
    return Status::InvalidArgument(job.source + ": " + std::to_string(workers) + " workers: from 1 to 65536");
  int batch = 0;
  SHOAL_RETURN_IF_ERROR(StepRecords(job, &batch));
  SHOAL_RETURN_IF_ERROR(CheckRecordsPerWorker(workers, batch, job.source));
  if (batch % workers != 0)
    return Status::InvalidArgument(job.source + ": a step's " + std::to_string(batch) +
                                   " records (train.batch_size x " + std::to_string(c.workers()) +
                                   " workers) do not divide over " + std::to_string(workers) + " workers");
  if (workers % c.nworker_groups != 0)
    return Status::InvalidArgument(job.source + ": " + std::to_string(workers) +
                                   " workers do not make the job's " + std::to_string(c.nworker_groups) +
                                   " worker groups (cluster.nworker_groups) " + "of equal size");
  SetField(resized, "train", "batch_size", &resized->train.batch_size, batch / workers);
  SetField(resized, "cluster", "nworkers_per_group", &resized->cluster.nworkers_per_group,
           workers / c.nworker_groups);
  // AllReduce keeps a server with every worker.
  return c.server_worker_separate ? Status::Ok() : WithExchange(*resized, true, resized);
}

Status WithExchange(const JobConfig& job, bool allreduce, JobConfig* out) {
  *out = job;
  ClusterConfig& c = out->cluster;
  SetField(out, "cluster", "server_worker_separate", &c.server_worker_separate, !allreduce);
  if (!allreduce) return Status::Ok();
  if (c.workers() % c.nserver_groups != 0)
    return Status::InvalidArgument(job.source + ": AllReduce puts a server with every worker, but " +
                                   std::to_string(c.workers()) + " workers do not divide into " +
                                   std::to_string(c.nserver_groups) +
                                   " server groups (cluster.nserver_groups)");
  SetField(out, "cluster", "nservers_per_group", &c.nservers_per_group, c.workers() / c.nserver_groups);
  return Status::Ok();
}

Status WithServers(const JobConfig& job, int servers, JobConfig* out) {
  *out = job;
  ClusterConfig& c = out->cluster;
  if (!c.server_worker_separate)
    return Status::InvalidArgument(job.source + ": --servers " + std::to_string(servers) +
                                   " with AllReduce, which has a server with every worker");
  if (static_cast<int64_t>(servers) * c.nserver_groups > (1 << 14))
    return Status::InvalidArgument(job.source + ": --servers " + std::to_string(servers) + " in " +
                                   std::to_string(c.nserver_groups) +
                                   " server groups: more than 16384 servers");
  SetField(out, "cluster", "nservers_per_group", &c.nservers_per_group, servers);
  return Status::Ok();
}

Status PlanJob(const JobConfig& given, const PlannerOptions& options, PartitionReport* report) {
  JobConfig job;
  SHOAL_RETURN_IF_ERROR(ResizeJob(given, options.workers, &job));
  std::unique_ptr<Net> net;
  SHOAL_RETURN_IF_ERROR(Net::Build(job, &net, /*allocate_params=*/false));
  std::vector<LayerFacts> layers = CollectLayerFacts(job, *net);
  std::vector<LayerOverride> overrides;
  SHOAL_RETURN_IF_ERROR(ReadOverrides(job, layers, &overrides));
  PlannerOptions o = options;
  o.workers = job.cluster.workers();
  o.job_group = job.cluster.nworkers_per_group;
  o.param_value_bytes = static_cast<double>(BytesPerValue(job.cluster.wire));
  const ConsistencyTraits& model = TraitsOf(job.cluster.consistency);
  o.overlap = ExchangesByLayer(job);
  o.exchanges_per_step = model.takes_gradients ? 1.0 : 1.0 / job.cluster.easgd_tau;
  o.staleness = model.one_version_a_step ? 0 : model.bounded_staleness ? job.cluster.staleness : -1;
  o.bound_servers = !job.cluster.server_worker_separate;
  o.server_work.updater_states =
      model.takes_gradients ? static_cast<int>(UpdaterStateNames(job.train.updater).size()) : 0;
  o.server_work.updates_alone = !model.one_version_a_step;
  o.server_work.server_groups = job.cluster.nserver_groups;
  // Each server group holds a copy and serves its share of the worker groups:
  // the load spreads over every server.
  if (o.servers == 0) o.servers = job.cluster.servers();
  o.bucket_floats = static_cast<double>(job.train.overlap_bucket_floats);
  int batch = 0;
  SHOAL_RETURN_IF_ERROR(StepRecords(job, &batch));
  return PlanLayers(layers, overrides, batch, o, job.source, report);
}

Status BuildPlan(const JobConfig& given, const PlannerOptions& planner, const PlanOptions& options,
                 PartitionReport* report, Plan* plan) {
  JobConfig job;
  SHOAL_RETURN_IF_ERROR(ResizeJob(given, planner.workers, &job));
  // Each exchange asked for, planned whole, with the servers it runs; the
  // fastest is written into the job.
  std::vector<bool> tries;
  if (planner.exchange == Exchange::kJob) tries.push_back(!job.cluster.server_worker_separate);
  if (planner.exchange == Exchange::kServers || planner.exchange == Exchange::kAuto) tries.push_back(false);
  if (planner.exchange == Exchange::kAllReduce || planner.exchange == Exchange::kAuto) tries.push_back(true);
  std::vector<std::pair<std::string, double>> tried;
  JobConfig best;
  Status last;
  for (bool allreduce : tries) {
    JobConfig candidate;
    PartitionReport r;
    Status s = WithExchange(job, allreduce, &candidate);
    if (s.ok() && planner.servers > 0) s = WithServers(candidate, planner.servers, &candidate);
    if (!s.ok() && planner.exchange == Exchange::kAuto) {  // an exchange the job cannot take is no choice
      last = s;
      continue;
    }
    SHOAL_RETURN_IF_ERROR(s);
    SHOAL_RETURN_IF_ERROR(PlanJob(candidate, planner, &r));
    // Auto with servers of their own: as many as advised.
    if (planner.exchange == Exchange::kAuto && !allreduce && planner.servers == 0 &&
        r.advised_servers != candidate.cluster.nservers_per_group) {
      SHOAL_RETURN_IF_ERROR(WithServers(candidate, r.advised_servers, &candidate));
      SHOAL_RETURN_IF_ERROR(PlanJob(candidate, planner, &r));
    }
    tried.emplace_back(allreduce ? "allreduce" : "servers", r.chosen.seconds);
    if (tried.size() == 1 || r.chosen.seconds < report->chosen.seconds) {
      *report = r;
      best = candidate;
    }
  }
  if (tried.empty()) return last;
  if (planner.exchange != Exchange::kJob) report->exchanges = tried;
  job = best;
  Partition partition;
  partition.group_size = report->grouping.group_size;
  for (size_t i = 0; i < report->choices.size(); ++i) {
    partition.dims.push_back(PartitionDim(report->choices[i]));
    partition.locations.push_back(report->choices[i] == Choice::kNone ? report->ranks[i] : 0);
  }
  partition.strategy = planner.strategy;
  partition.report = ReportToJson(*report);
  return MakePlan(job, options, partition, plan);
}

}  // namespace shoal
