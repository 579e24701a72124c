#include "plan/plan.h"

#include <memory>

#include "core/file_util.h"
#include "core/hash.h"
#include "net/net.h"
#include "plan/partition.h"

namespace shoal {
namespace {

using nlohmann::json;

constexpr int kPlanFormatVersion = 1;

const char* InitKindName(ParamInit::Kind kind) {
  return kind == ParamInit::Kind::kUniform ? "uniform" : "constant";
}

json ContentToJson(const Plan& plan) {
  json j;
  j["format"] = "shoal-plan";
  j["version"] = kPlanFormatVersion;
  j["strategy"] = plan.strategy;
  j["job"] = plan.job.yaml_text;
  // What scripts need without parsing the job: the topology and the data.
  const ClusterConfig& c = plan.job.cluster;
  j["cluster"] = {{"workers", c.workers()}, {"servers", c.servers()}, {"consistency", c.consistency},
                  {"timeout_ms", c.timeout_ms}, {"server_worker_separate", c.server_worker_separate}};
  j["data"] = {{"dataset", plan.job.data.dataset}, {"shards", plan.job.data.shards}};
  j["layers"] = json::array();
  for (const auto& l : plan.layers) {
    json layer = {{"name", l.name},     {"type", l.type},
                  {"partition_dim", l.partition_dim}, {"params", l.params},
                  {"feature_size", l.feature_size},   {"forward_flops", l.forward_flops}};
    if (l.partition_dim == -1) layer["location"] = l.location;
    j["layers"].push_back(layer);
  }
  j["params"] = json::array();
  for (const auto& p : plan.params)
    j["params"].push_back({{"name", p.name}, {"shape", p.shape},
                           {"init", {{"kind", InitKindName(p.init.kind)}, {"value", p.init.value}}},
                           {"slices", p.slices}});
  j["slices"] = json::array();
  for (const auto& s : plan.slices)
    j["slices"].push_back({{"key", s.key}, {"param", s.param}, {"offset", s.offset},
                           {"count", s.count}, {"server", s.server}});
  j["workers"] = json::array();
  for (const auto& w : plan.workers) {
    json worker = {{"id", w.id}, {"group", w.group}, {"rank", w.rank}};
    if (!w.endpoint.empty()) worker["endpoint"] = w.endpoint;
    j["workers"].push_back(worker);
  }
  j["servers"] = json::array();
  for (const auto& s : plan.servers) j["servers"].push_back({{"id", s.id}, {"endpoint", s.endpoint}});
  if (!plan.planner.is_null()) j["planner"] = plan.planner;
  return j;
}

}  // namespace

uint64_t Plan::hash_value() const { return std::stoull(hash, nullptr, 16); }

const ParamPlan* Plan::FindParam(const std::string& name) const {
  for (const auto& p : params)
    if (p.name == name) return &p;
  return nullptr;
}

namespace {

std::string Loopback(const ClusterConfig& c, int port) {
  return (c.tls_dir.empty() ? "tcp://" : "tls+tcp://") + std::string("127.0.0.1:") + std::to_string(port);
}

// Where the slices of `param` may be cut: every rank's held range starts a
// slice, so each worker pushes whole slices.
std::vector<size_t> RankBoundaries(const Plan& plan, const ParamPlan& param, int group_size) {
  std::vector<size_t> cuts;
  for (int r = 0; r < group_size; ++r) {
    Range held = HeldFloats(plan, param, r);
    if (!held.empty()) cuts.push_back(held.begin);
  }
  cuts.push_back(NumElements(param.shape));
  return cuts;
}

}  // namespace

Status MakePlan(const JobConfig& job, const PlanOptions& options, const Partition& partition, Plan* plan) {
  std::unique_ptr<Net> net;
  SHOAL_RETURN_IF_ERROR(Net::Build(job, &net, /*allocate_params=*/false));
  *plan = Plan();
  plan->job = job;
  plan->strategy = partition.strategy;
  plan->planner = partition.report;
  const ClusterConfig& c = job.cluster;
  const int m = partition.group_size;
  if (m < 1 || c.workers() % m != 0)
    return Status::InvalidArgument("groups of " + std::to_string(m) + " do not divide the job's " +
                                   std::to_string(c.workers()) + " workers");
  const size_t n_layers = net->layers().size();
  if ((!partition.dims.empty() && partition.dims.size() != n_layers) ||
      (!partition.locations.empty() && partition.locations.size() != n_layers))
    return Status::InvalidArgument("a partition of " + std::to_string(partition.dims.size()) +
                                   " layers for a net of " + std::to_string(n_layers));
  for (size_t i = 0; i < n_layers; ++i) {
    const Layer& layer = *net->layers()[i];
    LayerPlan l;
    l.name = layer.name();
    l.type = layer.type();
    l.partition_dim = partition.dims.empty() ? 0 : partition.dims[i];
    l.location = partition.locations.empty() ? 0 : partition.locations[i];
    if (l.location < 0 || l.location >= m)
      return Status::InvalidArgument("layer '" + l.name + "': location " + std::to_string(l.location) +
                                     " is not a rank of a group of " + std::to_string(m));
    l.params = layer.param_count();
    l.feature_size = layer.feature_size();
    l.forward_flops = layer.ForwardFlopsPerRecord();
    plan->layers.push_back(l);
  }
  for (int w = 0; w < c.workers(); ++w) plan->workers.push_back({w, w / m, w % m, ""});
  for (Param* p : net->params()) plan->params.push_back({p->name, p->shape, p->init, {}});
  // Each server group holds a whole copy; the first group's slices are the
  // ones a parameter lists (and the ones checkpoints hold).
  const int per_group = c.nservers_per_group;
  for (int group = 0; group < c.nserver_groups; ++group) {
    int next_server = 0;
    for (ParamPlan& pp : plan->params) {
      size_t begin = 0;
      for (size_t end : RankBoundaries(*plan, pp, m)) {
        // Servers with their workers (AllReduce): each owns 1/S of every
        // range; separate servers: slices of at most slice_floats, dealt in turn.
        const size_t pieces = c.server_worker_separate ? 1 : per_group;
        for (size_t piece = 0; piece < pieces; ++piece) {
          const Range part = SplitRange(end - begin, static_cast<int>(pieces), static_cast<int>(piece));
          for (size_t offset = begin + part.begin; offset < begin + part.end; offset += c.slice_floats) {
            SlicePlan s;
            s.key = static_cast<uint32_t>(plan->slices.size());
            s.param = pp.name;
            s.offset = offset;
            s.count = std::min<size_t>(c.slice_floats, begin + part.end - offset);
            s.server = group * per_group + (c.server_worker_separate ? next_server : static_cast<int>(piece));
            if (c.server_worker_separate) next_server = (next_server + 1) % per_group;
            if (group == 0) pp.slices.push_back(s.key);
            plan->slices.push_back(s);
          }
        }
        begin = end;
      }
    }
  }
  if (!options.endpoints.empty() && static_cast<int>(options.endpoints.size()) != c.servers())
    return Status::InvalidArgument("the job has " + std::to_string(c.servers()) + " servers but " +
                                   std::to_string(options.endpoints.size()) + " endpoints were given");
  for (int i = 0; i < c.servers(); ++i)
    plan->servers.push_back({i, options.endpoints.empty() ? Loopback(c, options.base_port + i) : options.endpoints[i]});
  // Groups of one need no endpoints; given, they say where the workers run.
  if (m > 1 || !options.worker_endpoints.empty()) {
    if (!options.worker_endpoints.empty() && static_cast<int>(options.worker_endpoints.size()) != c.workers())
      return Status::InvalidArgument("the job has " + std::to_string(c.workers()) + " workers but " +
                                     std::to_string(options.worker_endpoints.size()) + " worker endpoints were given");
    for (auto& w : plan->workers)
      w.endpoint = options.worker_endpoints.empty() ? Loopback(c, options.base_port + c.servers() + w.id)
                                                    : options.worker_endpoints[w.id];
  }
  plan->hash = HexU64(Fnv1a64(ContentToJson(*plan).dump()));
  return Status::Ok();
}

Status MakeDataParallelPlan(const JobConfig& job, const PlanOptions& options, Plan* plan) {
  return MakePlan(job, options, Partition(), plan);
}

json PlanToJson(const Plan& plan) {
  json j = ContentToJson(plan);
  j["hash"] = plan.hash;
  return j;
}

Status PlanFromJson(const json& j, const std::string& source, Plan* plan) {
  *plan = Plan();
  try {
    if (j.at("format") != "shoal-plan") return Status::InvalidArgument(source + ": not a shoal plan");
    if (j.at("version") != kPlanFormatVersion)
      return Status::InvalidArgument(source + ": plan format version " + j.at("version").dump() +
                                     ", this build reads " + std::to_string(kPlanFormatVersion));
    plan->hash = j.at("hash").get<std::string>();
    plan->strategy = j.at("strategy").get<std::string>();
    if (j.contains("planner")) plan->planner = j.at("planner");
    std::string job_text = j.at("job").get<std::string>();
    SHOAL_RETURN_IF_ERROR(ParseJob(job_text, source + " (job)", &plan->job));
    plan->job.yaml_text = job_text;  // hash over the bytes as written
    for (const auto& l : j.at("layers"))
      plan->layers.push_back({l.at("name"), l.at("type"), l.at("partition_dim"), l.value("location", 0),
                              l.at("params"), l.at("feature_size"), l.at("forward_flops")});
    for (const auto& p : j.at("params")) {
      ParamPlan pp;
      pp.name = p.at("name");
      pp.shape = p.at("shape").get<Shape>();
      pp.init.kind = p.at("init").at("kind") == "uniform" ? ParamInit::Kind::kUniform
                                                          : ParamInit::Kind::kConstant;
      pp.init.value = p.at("init").at("value");
      pp.slices = p.at("slices").get<std::vector<uint32_t>>();
      plan->params.push_back(pp);
    }
    for (const auto& s : j.at("slices"))
      plan->slices.push_back({s.at("key"), s.at("param"), s.at("offset"), s.at("count"), s.at("server")});
    for (const auto& w : j.at("workers"))
      plan->workers.push_back({w.at("id"), w.at("group"), w.at("rank"), w.value("endpoint", "")});
    for (const auto& s : j.at("servers")) plan->servers.push_back({s.at("id"), s.at("endpoint")});
  } catch (const json::exception& e) {
    return Status::InvalidArgument(source + ": malformed plan: " + e.what());
  }
  for (size_t i = 0; i < plan->slices.size(); ++i) {
    const SlicePlan& s = plan->slices[i];
    if (s.key != i || s.server < 0 || s.server >= static_cast<int>(plan->servers.size()) ||
        !plan->FindParam(s.param))
      return Status::InvalidArgument(source + ": slice " + std::to_string(i) + " is inconsistent");
  }
  // Hash the file as written: the summaries scripts read ("cluster", "data")
  // are not read back into the plan, so a rebuilt copy would miss their edits.
  json content = j;
  content.erase("hash");
  std::string computed = HexU64(Fnv1a64(content.dump()));
  if (computed != plan->hash)
    return Status::Corruption(source + ": content hash " + computed + " does not match the recorded " +
                              plan->hash + " (the plan was edited after dl-plan wrote it)");
  const int m = GroupSize(*plan);
  for (size_t i = 0; i < plan->workers.size(); ++i) {
    const WorkerPlan& w = plan->workers[i];
    if (w.id != static_cast<int>(i) || w.id != w.group * m + w.rank || (m > 1 && w.endpoint.empty()))
      return Status::InvalidArgument(source + ": worker " + std::to_string(i) + " is inconsistent with groups of " +
                                     std::to_string(m));
  }
  for (const auto& l : plan->layers)
    if (l.partition_dim < -1 || l.partition_dim > 1 || l.location < 0 || l.location >= m)
      return Status::InvalidArgument(source + ": layer '" + l.name + "' has partition_dim " +
                                     std::to_string(l.partition_dim) + " and location " + std::to_string(l.location) +
                                     " (groups of " + std::to_string(m) + ")");
  return Status::Ok();
}

Status LoadPlan(const std::string& path, Plan* plan) {
  std::string text;
  SHOAL_RETURN_IF_ERROR(ReadFile(path, &text));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return Status::InvalidArgument(path + ": not valid JSON");
  return PlanFromJson(j, path, plan);
}

}  // namespace shoal
