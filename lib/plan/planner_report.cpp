// What dl-plan says of its search: plan.json's "planner" section and the
// table --explain prints.
#include <cstdio>
#include <string>

#include "plan/planner.h"

namespace shoal {
namespace {

using nlohmann::json;

std::string Int(double v) { return std::to_string(static_cast<long long>(v)); }

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

json ReportToJson(const PartitionReport& r) {
  json j;
  j["profile"] = {{"name", r.profile.name},
                  {"bandwidth_gbps", r.profile.bandwidth_gbps},
                  {"latency_us", r.profile.latency_us},
                  {"gflops_per_worker", r.profile.gflops_per_worker},
                  {"nodes", r.profile.nodes},
                  {"server_gbps", r.profile.server_gbps},
                  {"workers_per_node", r.profile.workers_per_node},
                  {"backplane_gbps", r.profile.backplane_gbps},
                  {"nodes_per_rack", r.profile.nodes_per_rack},
                  {"uplink_gbps", r.profile.uplink_gbps},
                  {"layer_gflops", r.profile.layer_gflops},
                  {"half_rate_records", r.profile.half_rate_records},
                  {"half_rate_inner", r.profile.half_rate_inner},
                  {"winograd_speedup", r.profile.winograd_speedup},
                  {"compute_cv", r.profile.compute_cv},
                  {"compute_cv_seconds", r.profile.compute_cv_seconds},
                  {"server_memory_gb_per_s", r.profile.server_memory_gb_per_s},
                  {"host_device_gbps", r.profile.host_device_gbps}};
  j["overlap"] = r.grouping.overlap;
  j["exchanges_per_step"] = r.grouping.exchanges_per_step;
  j["staleness"] = r.grouping.staleness;
  j["workers"] = r.grouping.workers;
  j["batch"] = r.grouping.batch;
  j["group_size"] = r.grouping.group_size;
  j["groups"] = r.grouping.groups();
  j["servers"] = r.grouping.servers;
  j["advised_servers"] = r.advised_servers;
  j["max_states"] = r.max_states;
  if (!r.exchanges.empty()) {
    j["exchanges"] = json::object();
    for (const auto& [name, seconds] : r.exchanges) j["exchanges"][name] = seconds;
  }
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
              {"server_seconds", c.server_s},
              {"feature_seconds", c.feature_s},
              {"seconds", c.seconds()}};
    if (r.choices[i] == Choice::kNone) l["location"] = r.ranks[i];
    j["layers"].push_back(l);
  }
  j["totals"] = {{"chosen", TotalsJson(r.chosen)},
                 {"optimum", TotalsJson(r.optimum)},
                 {"all_data", TotalsJson(r.all_data)},
                 {"all_model", TotalsJson(r.all_model)}};
  // A synced layer rules the one group of every worker out: its cost is what it would be.
  if (!r.AllModelRuns()) j["totals"]["all_model"]["runs"] = false;
  j["group_sizes"] = json::array();
  for (const auto& t : r.by_group_size) j["group_sizes"].push_back(TotalsJson(t));
  return j;
}

namespace {

std::string Bytes(double b) {
  char buf[32];
  if (b == 0.0) return "-";
  if (b >= 1e9)
    std::snprintf(buf, sizeof buf, "%.2fG", b / 1e9);
  else if (b >= 1e6)
    std::snprintf(buf, sizeof buf, "%.2fM", b / 1e6);
  else if (b >= 1e3)
    std::snprintf(buf, sizeof buf, "%.1fk", b / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0f", b);
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
                "plan for %d workers (%d groups of %d), %d servers%s (%d would keep up), mini-batch %d, "
                "strategy %s\n"
                "profile '%s': %g Gbit/s, %g us, %g GFLOP/s per worker\n"
                "bytes are per step on the busiest worker's link; ms per step\n\n",
                r.grouping.workers, r.grouping.groups(), r.grouping.group_size, r.grouping.servers,
                r.grouping.bound_servers ? " with their workers" : "", r.advised_servers, r.grouping.batch,
                Name(r.strategy), r.profile.name.c_str(), r.profile.bandwidth_gbps, r.profile.latency_us,
                r.profile.gflops_per_worker);
  out += buf;
  std::snprintf(buf, sizeof buf, "%-16s %-16s %-7s %10s %9s %9s %9s %9s %9s %9s\n", "layer", "type", "choice",
                "params", "par out", "par in", "feat in", "feat out", "compute", "total");
  out += buf;
  for (size_t i = 0; i < r.layers.size(); ++i) {
    const LayerCost& c = r.costs[i];
    std::string choice = ChoiceName(r.choices[i]);
    if (r.overrides[i].has_partition) choice += "*";
    std::snprintf(buf, sizeof buf, "%-16s %-16s %-7s %10s %9s %9s %9s %9s %9s %9s\n",
                  r.layers[i].name.c_str(), r.layers[i].type.c_str(), choice.c_str(),
                  Int(r.layers[i].params).c_str(), Bytes(c.param_bytes_out).c_str(),
                  Bytes(c.param_bytes_in).c_str(), Bytes(c.feature_bytes_in).c_str(),
                  Bytes(c.feature_bytes_out).c_str(), Ms(c.compute_s).c_str(), Ms(c.seconds()).c_str());
    out += buf;
  }
  out += "\n";
  out += TotalsLine("chosen", r.chosen);
  if (r.has_overrides) out += TotalsLine("optimum (no overrides)", r.optimum);
  out += TotalsLine("all data parallel", r.all_data);
  if (r.AllModelRuns())
    out += TotalsLine("all model parallel", r.all_model);
  else
    out += "  all model parallel       cannot run: layer '" + r.syncing +
           "' sums over every worker's batch (sync: true), which needs groups of one\n";
  if (r.has_overrides) out += "  (* a choice fixed in the job file)\n";
  return out;
}

}  // namespace shoal
