#include "plan/cluster_profile.h"

#include <limits>
#include <sstream>

#include "config/fields.h"
#include "core/file_util.h"
#include "layers/layer.h"

namespace shoal {
namespace {

// A rate that must be positive, and sane: from 1e-6 (a rate so small that
// every time is infinite is no profile) to 1e9.
Status Positive(const Fields& f, const std::string& key, double default_value, double* out) {
  SHOAL_RETURN_IF_ERROR(f.Float(key, default_value, out, -std::numeric_limits<double>::max(),
                                std::numeric_limits<double>::max()));
  if (!(*out >= 1e-6 && *out <= 1e9)) {
    std::ostringstream got;
    got << *out;
    return f.FieldError(key, "must be positive (1e-6 to 1e9), got " + got.str());
  }
  return Status::Ok();
}

// A rate that may be left out or 0 (none, or as another field says); given, as Positive.
Status OptionalRate(const Fields& f, const std::string& key, double* out) {
  SHOAL_RETURN_IF_ERROR(f.Float(key, 0.0, out, 0.0, 1e9));
  return *out > 0.0 ? Positive(f, key, *out, out) : Status::Ok();
}

}  // namespace

double ShortSumShare(double inner, double half) {
  return half > 0.0 && inner > 0.0 ? inner / (inner + half) : 1.0;
}

double ClusterProfile::FlopsPerSecond(const std::string& type, double rows, double inner) const {
  auto own = layer_gflops.find(type);
  double rate = (own != layer_gflops.end() ? own->second : gflops_per_worker) * 1e9;
  if (half_rate_records > 0.0) rate *= rows / (rows + half_rate_records);
  return rate * ShortSumShare(inner, half_rate_inner);
}

Status ParseClusterProfile(const std::string& text, const std::string& source, ClusterProfile* p) {
  *p = ClusterProfile();
  Document doc;
  SHOAL_RETURN_IF_ERROR(ParseYaml(text, source, &doc));
  if (!doc.root.is_object())
    return Status::InvalidArgument(source +
                                   ": a cluster profile is a mapping with 'bandwidth_gbps', "
                                   "'latency_us', 'gflops_per_worker' and 'nodes'");
  Fields f(doc.root, doc.origin, "", "cluster profile");
  SHOAL_RETURN_IF_ERROR(f.String("name", p->name, &p->name));
  for (const char* required : {"bandwidth_gbps", "latency_us", "gflops_per_worker"})
    if (!f.Has(required)) return f.Error(std::string("missing field '") + required + "'");
  SHOAL_RETURN_IF_ERROR(Positive(f, "bandwidth_gbps", p->bandwidth_gbps, &p->bandwidth_gbps));
  SHOAL_RETURN_IF_ERROR(f.Float("latency_us", p->latency_us, &p->latency_us, 0.0, 1e9));
  SHOAL_RETURN_IF_ERROR(Positive(f, "gflops_per_worker", p->gflops_per_worker, &p->gflops_per_worker));
  SHOAL_RETURN_IF_ERROR(f.Int("nodes", p->nodes, &p->nodes, 0));
  SHOAL_RETURN_IF_ERROR(OptionalRate(f, "server_gbps", &p->server_gbps));
  SHOAL_RETURN_IF_ERROR(f.Int("workers_per_node", p->workers_per_node, &p->workers_per_node, 1, 1 << 16));
  SHOAL_RETURN_IF_ERROR(OptionalRate(f, "backplane_gbps", &p->backplane_gbps));
  SHOAL_RETURN_IF_ERROR(f.Int("nodes_per_rack", p->nodes_per_rack, &p->nodes_per_rack, 0, 1 << 20));
  SHOAL_RETURN_IF_ERROR(OptionalRate(f, "uplink_gbps", &p->uplink_gbps));  // unused without racks
  if (p->nodes_per_rack > 0 && p->uplink_gbps == 0.0)
    return f.FieldError("nodes_per_rack", "needs 'uplink_gbps', the bandwidth of a rack's uplink");
  if (f.Has("layer_gflops")) {
    std::unique_ptr<Fields> rates;
    SHOAL_RETURN_IF_ERROR(f.Section("layer_gflops", "layer_gflops", &rates));
    for (const std::string& type : LayerTypes()) {
      if (!rates->Has(type)) continue;
      double rate = 0.0;
      SHOAL_RETURN_IF_ERROR(Positive(*rates, type, 0.0, &rate));
      p->layer_gflops[type] = rate;
    }
    SHOAL_RETURN_IF_ERROR(rates->CheckNoUnknown());
  }
  SHOAL_RETURN_IF_ERROR(f.Float("half_rate_records", 0.0, &p->half_rate_records, 0.0, 1e6));
  SHOAL_RETURN_IF_ERROR(f.Float("half_rate_inner", 0.0, &p->half_rate_inner, 0.0, 1e6));
  SHOAL_RETURN_IF_ERROR(f.Float("winograd_speedup", 1.0, &p->winograd_speedup, kLowestWinogradSpeedup,
                                kHighestWinogradSpeedup));
  // Beyond ~0.5 a normal spread would give negative times: cv is a modest spread.
  SHOAL_RETURN_IF_ERROR(f.Float("compute_cv", 0.0, &p->compute_cv, 0.0, 1.0));
  SHOAL_RETURN_IF_ERROR(f.Float("compute_cv_seconds", 0.0, &p->compute_cv_seconds, 0.0, 1e6));
  SHOAL_RETURN_IF_ERROR(OptionalRate(f, "server_memory_gb_per_s", &p->server_memory_gb_per_s));
  SHOAL_RETURN_IF_ERROR(OptionalRate(f, "host_device_gbps", &p->host_device_gbps));
  return f.CheckNoUnknown();
}

Status LoadClusterProfile(const std::string& path, ClusterProfile* profile) {
  std::string text;
  SHOAL_RETURN_IF_ERROR(ReadFile(path, &text, kMaxYamlBytes));
  return ParseClusterProfile(text, path, profile);
}

std::string ClusterProfileToYaml(const ClusterProfile& p, const std::string& comment) {
  std::ostringstream out;
  out.precision(6);
  if (!comment.empty()) out << "# " << comment << "\n";
  out << "name: " << p.name << "\n"
      << "bandwidth_gbps: " << p.bandwidth_gbps << "\n"
      << "latency_us: " << p.latency_us << "\n"
      << "gflops_per_worker: " << p.gflops_per_worker << "\n"
      << "nodes: " << p.nodes << "\n"
      << "server_gbps: " << p.server_gbps << "   # 0: as bandwidth_gbps\n"
      << "workers_per_node: " << p.workers_per_node << "\n"
      << "backplane_gbps: " << p.backplane_gbps << "   # 0: non-blocking\n";
  if (p.nodes_per_rack > 0)
    out << "nodes_per_rack: " << p.nodes_per_rack << "\nuplink_gbps: " << p.uplink_gbps << "\n";
  if (!p.layer_gflops.empty()) {
    out << "layer_gflops:\n";
    for (const auto& [type, rate] : p.layer_gflops) out << "  " << type << ": " << rate << "\n";
  }
  out << "half_rate_records: " << p.half_rate_records << "\n";
  if (p.half_rate_inner > 0) out << "half_rate_inner: " << p.half_rate_inner << "\n";
  out << "winograd_speedup: " << p.winograd_speedup << "   # 1: Winograd's convolutions no faster\n"
      << "compute_cv: " << p.compute_cv << "\n"
      << "compute_cv_seconds: " << p.compute_cv_seconds << "   # 0: compute_cv holds for any step\n"
      << "server_memory_gb_per_s: " << p.server_memory_gb_per_s << "   # 0: a server's work is free\n";
  if (p.host_device_gbps > 0) out << "host_device_gbps: " << p.host_device_gbps << "\n";
  return out.str();
}

}  // namespace shoal
