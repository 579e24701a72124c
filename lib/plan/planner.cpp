#include "plan/planner.h"

#include <algorithm>
#include <cmath>
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

std::string Int(double v) { return std::to_string(static_cast<long long>(v)); }

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
        return f.FieldError("location", "is '" + c.location + "', not a worker rank within the group (0, 1, ...)");
      if (o.has_partition && o.choice != Choice::kNone)
        return f.FieldError("location", "places an unpartitioned layer on one worker; it cannot be honoured with "
                                        "partition_dim " + std::to_string(c.partition_dim) + " (use -1)");
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
      return Status::InvalidArgument(layer + ": partition_dim " + std::to_string(PartitionDim(o.choice)) +
                                     " cannot be honoured: " +
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

std::vector<int> Divisors(int n) {
  std::vector<int> d;
  for (int m = 1; m <= n; ++m)
    if (n % m == 0) d.push_back(m);
  return d;
}

// The fewest servers whose links carry no more than a worker's: the total
// parameter traffic of a layer over the busiest worker's.
int ChooseServers(const std::vector<LayerCost>& costs, int workers, double value_bytes) {
  int servers = 1;
  for (const auto& c : costs) {
    if (c.param_bytes_out <= 0.0) continue;
    double ratio = c.param_floats_total / 2.0 * value_bytes / c.param_bytes_out;
    servers = std::max(servers, static_cast<int>(std::ceil(ratio - 1e-9)));
  }
  return std::min(servers, workers);
}

json TotalsJson(const PlanTotals& t) {
  const LayerCost& c = t.cost;
  return {{"group_size", t.group_size},
          {"groups", t.groups},
          {"seconds", t.seconds},
          {"compute_seconds", c.compute_s},
          {"param_bytes", c.param_bytes_out + c.param_bytes_in},
          {"feature_bytes", c.feature_bytes_in + c.feature_bytes_out},
          {"param_floats_total", c.param_floats_total},
          {"feature_floats_total", c.feature_floats_total}};
}

}  // namespace

const char* StrategyName(Strategy s) {
  return s == Strategy::kOptimal ? "optimal" : s == Strategy::kData ? "data" : "model";
}

PlanTotals EvaluateChoices(const std::vector<LayerFacts>& layers, const std::vector<Choice>& choices,
                           const std::vector<int>& ranks, const Grouping& g, const ClusterProfile& p) {
  PlanTotals t;
  t.group_size = g.group_size;
  t.groups = g.groups();
  // Seconds add per layer (max(compute, params) + features), not per component.
  for (const auto& c : CostBreakdown(layers, choices, ranks, g, p)) {
    t.cost.Add(c);
    t.seconds += c.seconds();
  }
  return t;
}

Status PlanLayers(const std::vector<LayerFacts>& layers, const std::vector<LayerOverride>& overrides, int batch,
                  const PlannerOptions& options, const std::string& where, PartitionReport* report) {
  *report = PartitionReport();
  const ClusterProfile& p = options.profile;
  const int n = options.workers;
  if (n < 1) return Status::InvalidArgument(where + ": the number of workers must be at least 1");
  if (p.nodes > 0 && n > p.nodes)
    return Status::InvalidArgument(where + ": " + std::to_string(n) + " workers, but the cluster profile '" +
                                   p.name + "' has " + std::to_string(p.nodes) + " nodes");
  if (n > batch)
    return Status::InvalidArgument(where + ": " + std::to_string(n) + " workers but a step's mini-batch has " +
                                   std::to_string(batch) +
                                   " records (train.batch_size x the job's workers): every worker needs one");
  if (options.servers < 0) return Status::InvalidArgument(where + ": the number of servers must be positive");
  SHOAL_RETURN_IF_ERROR(CheckOverrides(layers, overrides, options, n, where));

  report->strategy = options.strategy;
  report->profile = p;
  report->layers = layers;
  report->overrides = overrides;
  std::vector<uint8_t> free_mask, honoured_mask;
  std::vector<int> ranks;
  for (size_t i = 0; i < layers.size(); ++i) {
    free_mask.push_back(Allowed(layers[i]));
    honoured_mask.push_back(overrides[i].has_partition ? Only(overrides[i].choice) : free_mask.back());
    ranks.push_back(std::max(overrides[i].rank, 0));
    report->has_overrides |= overrides[i].has_partition;
  }
  report->ranks = ranks;

  Grouping base;
  base.workers = n;
  base.batch = batch;
  base.servers = options.servers;
  base.param_value_bytes = options.param_value_bytes;
  // Every layer that can take `c` takes it; the others are data parallel.
  auto fixed = [&](Choice c) {
    std::vector<Choice> v;
    for (const auto& l : layers) v.push_back(Allowed(l) & Only(c) ? c : Choice::kData);
    return v;
  };
  if (options.group_size < 0 || (options.group_size > 0 && n % options.group_size != 0))
    return Status::InvalidArgument(where + ": groups of " + std::to_string(options.group_size) +
                                   " do not divide " + std::to_string(n) + " workers");
  Grouping one_group = base, singletons = base;
  one_group.group_size = n;
  report->all_data = EvaluateChoices(layers, fixed(Choice::kData), ranks, singletons, p);
  report->all_model = EvaluateChoices(layers, fixed(Choice::kModel), ranks, one_group, p);

  Grouping chosen = base;
  if (options.strategy == Strategy::kData) {
    chosen.group_size = std::max(options.group_size, 1);
    report->choices = fixed(Choice::kData);
    report->optimum = EvaluateChoices(layers, report->choices, ranks, chosen, p);
  } else if (options.strategy == Strategy::kModel) {
    chosen.group_size = options.group_size > 0 ? options.group_size : n;
    report->choices = fixed(Choice::kModel);
    report->optimum = EvaluateChoices(layers, report->choices, ranks, chosen, p);
  } else {
    double best_free = INFINITY, best_honoured = INFINITY;
    const std::vector<int> sizes = options.group_size > 0 ? std::vector<int>{options.group_size} : Divisors(n);
    for (int m : sizes) {
      Grouping g = base;
      g.group_size = m;
      bool ranks_fit = true;
      for (const auto& o : overrides) ranks_fit &= o.rank < m;
      SearchResult free_result, honoured_result;
      SHOAL_RETURN_IF_ERROR(
          SearchPartition(BuildCostGraph(layers, free_mask, ranks, g, p), &free_result).Within(where));
      report->max_states = std::max(report->max_states, free_result.max_states);
      if (free_result.cost < best_free * (1 - 1e-12)) {
        best_free = free_result.cost;
        report->optimum = EvaluateChoices(layers, free_result.choices, ranks, g, p);
      }
      if (!ranks_fit) continue;
      if (report->has_overrides)
        SHOAL_RETURN_IF_ERROR(
            SearchPartition(BuildCostGraph(layers, honoured_mask, ranks, g, p), &honoured_result).Within(where));
      else
        honoured_result = free_result;
      report->by_group_size.push_back(EvaluateChoices(layers, honoured_result.choices, ranks, g, p));
      if (honoured_result.cost < best_honoured * (1 - 1e-12)) {
        best_honoured = honoured_result.cost;
        report->choices = honoured_result.choices;
        chosen = g;
      }
    }
  }
  if (options.servers == 0) {
    chosen.servers = 0;
    chosen.servers = ChooseServers(CostBreakdown(layers, report->choices, ranks, chosen, p), n,
                                   chosen.param_value_bytes);
  }
  report->grouping = chosen;
  report->costs = CostBreakdown(layers, report->choices, ranks, chosen, p);
  report->chosen = EvaluateChoices(layers, report->choices, ranks, chosen, p);
  return Status::Ok();
}

Status PlanJob(const JobConfig& job, const PlannerOptions& options, PartitionReport* report) {
  std::unique_ptr<Net> net;
  SHOAL_RETURN_IF_ERROR(Net::Build(job, &net, /*allocate_params=*/false));
  std::vector<LayerFacts> layers = CollectLayerFacts(job, *net);
  std::vector<LayerOverride> overrides;
  SHOAL_RETURN_IF_ERROR(ReadOverrides(job, layers, &overrides));
  PlannerOptions o = options;
  if (o.workers == 0) o.workers = job.cluster.workers();
  ValueEncoding wire;
  SHOAL_RETURN_IF_ERROR(EncodingNamed(job.cluster.wire, &wire).Within(job.source));
  o.param_value_bytes = static_cast<double>(BytesPerValue(wire));
  const int batch = job.train.batch_size * job.cluster.workers();
  return PlanLayers(layers, overrides, batch, o, job.source, report);
}

json ReportToJson(const PartitionReport& r) {
  json j;
  j["profile"] = {{"name", r.profile.name},
                  {"bandwidth_gbps", r.profile.bandwidth_gbps},
                  {"latency_us", r.profile.latency_us},
                  {"gflops_per_worker", r.profile.gflops_per_worker},
                  {"nodes", r.profile.nodes}};
  j["workers"] = r.grouping.workers;
  j["batch"] = r.grouping.batch;
  j["group_size"] = r.grouping.group_size;
  j["groups"] = r.grouping.groups();
  j["servers"] = r.grouping.servers;
  j["max_states"] = r.max_states;
  j["layers"] = json::array();
  for (size_t i = 0; i < r.layers.size(); ++i) {
    const LayerCost& c = r.costs[i];
    json l = {{"name", r.layers[i].name},
              {"choice", ChoiceName(r.choices[i])},
              {"partition_dim", PartitionDim(r.choices[i])},
              {"overridden", r.overrides[i].has_partition},
              {"param_bytes_out", c.param_bytes_out},
              {"param_bytes_in", c.param_bytes_in},
              {"feature_bytes_in", c.feature_bytes_in},
              {"feature_bytes_out", c.feature_bytes_out},
              {"compute_seconds", c.compute_s},
              {"param_seconds", c.param_s},
              {"feature_seconds", c.feature_s},
              {"seconds", c.seconds()}};
    if (r.choices[i] == Choice::kNone) l["location"] = r.ranks[i];
    j["layers"].push_back(l);
  }
  j["totals"] = {{"chosen", TotalsJson(r.chosen)},
                 {"optimum", TotalsJson(r.optimum)},
                 {"all_data", TotalsJson(r.all_data)},
                 {"all_model", TotalsJson(r.all_model)}};
  j["group_sizes"] = json::array();
  for (const auto& t : r.by_group_size) j["group_sizes"].push_back(TotalsJson(t));
  return j;
}

namespace {

std::string Bytes(double b) {
  char buf[32];
  if (b == 0.0) return "-";
  if (b >= 1e9) std::snprintf(buf, sizeof buf, "%.2fG", b / 1e9);
  else if (b >= 1e6) std::snprintf(buf, sizeof buf, "%.2fM", b / 1e6);
  else if (b >= 1e3) std::snprintf(buf, sizeof buf, "%.1fk", b / 1e3);
  else std::snprintf(buf, sizeof buf, "%.0f", b);
  return buf;
}

std::string Ms(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s * 1e3);
  return buf;
}

std::string TotalsLine(const char* label, const PlanTotals& t) {
  char buf[256];
  const LayerCost& c = t.cost;
  std::snprintf(buf, sizeof buf, "  %-22s %10s ms   M=%-4d groups=%-4d params %9s  features %9s\n", label,
                Ms(t.seconds).c_str(), t.group_size, t.groups,
                Bytes(c.param_bytes_out + c.param_bytes_in).c_str(),
                Bytes(c.feature_bytes_in + c.feature_bytes_out).c_str());
  return buf;
}

}  // namespace

std::string ExplainReport(const PartitionReport& r) {
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "plan for %d workers (%d groups of %d), %d servers, mini-batch %d, strategy %s\n"
                "profile '%s': %g Gbit/s, %g us, %g GFLOP/s per worker\n"
                "bytes are per step on the busiest worker's link; ms per step\n\n",
                r.grouping.workers, r.grouping.groups(), r.grouping.group_size, r.grouping.servers,
                r.grouping.batch, StrategyName(r.strategy), r.profile.name.c_str(), r.profile.bandwidth_gbps,
                r.profile.latency_us, r.profile.gflops_per_worker);
  out += buf;
  std::snprintf(buf, sizeof buf, "%-16s %-16s %-7s %10s %9s %9s %9s %9s %9s %9s\n", "layer", "type", "choice",
                "params", "par out", "par in", "feat in", "feat out", "compute", "total");
  out += buf;
  for (size_t i = 0; i < r.layers.size(); ++i) {
    const LayerCost& c = r.costs[i];
    std::string choice = ChoiceName(r.choices[i]);
    if (r.overrides[i].has_partition) choice += "*";
    std::snprintf(buf, sizeof buf, "%-16s %-16s %-7s %10s %9s %9s %9s %9s %9s %9s\n", r.layers[i].name.c_str(),
                  r.layers[i].type.c_str(), choice.c_str(), Int(r.layers[i].params).c_str(),
                  Bytes(c.param_bytes_out).c_str(), Bytes(c.param_bytes_in).c_str(),
                  Bytes(c.feature_bytes_in).c_str(), Bytes(c.feature_bytes_out).c_str(), Ms(c.compute_s).c_str(),
                  Ms(c.seconds()).c_str());
    out += buf;
  }
  out += "\n";
  out += TotalsLine("chosen", r.chosen);
  if (r.has_overrides) out += TotalsLine("optimum (no overrides)", r.optimum);
  out += TotalsLine("all data parallel", r.all_data);
  out += TotalsLine("all model parallel", r.all_model);
  if (r.has_overrides) out += "  (* a choice fixed in the job file)\n";
  return out;
}

}  // namespace shoal
