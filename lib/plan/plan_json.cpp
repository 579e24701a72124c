// plan.json as written and read (schemas/plan.schema.json), and the checks a
// plan passes before any process acts on it: a plan is untrusted input (its
// hash proves only that nobody edited it without recomputing the hash).
#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <type_traits>

#include "core/file_util.h"
#include "core/hash.h"
#include "core/json_fields.h"
#include "core/json_text.h"
#include "core/text.h"
#include "graph/net.h"
#include "plan/partition.h"
#include "plan/plan.h"

namespace shoal {
namespace {

using nlohmann::json;

// 2: the job is embedded as typed JSON (1 embedded its YAML text).
constexpr int kPlanFormatVersion = 2;
// A plan's file: generous for a 1000-layer net on 1000 workers, finite for a hostile one.
constexpr size_t kMaxPlanBytes = 64u << 20;

const char* InitKindName(ParamInit::Kind kind) {
  return kind == ParamInit::Kind::kUniform    ? "uniform"
         : kind == ParamInit::Kind::kConstant ? "constant"
                                              : "checkpoint";
}

json InitToJson(const ParamInit& init) {
  json j = {{"kind", InitKindName(init.kind)}, {"value", init.value}};
  if (init.kind == ParamInit::Kind::kCheckpoint)
    j.update({{"checkpoint", init.checkpoint}, {"param", init.param}, {"transpose", init.transpose}});
  return j;
}

json ContentToJson(const Plan& plan) {
  json j;
  j["format"] = "shoal-plan";
  j["version"] = kPlanFormatVersion;
  j["strategy"] = Name(plan.strategy);
  j["commit"] = plan.commit;
  j["job"] = plan.job.resolved;
  // What scripts need without reading the job: the topology and the data.
  const ClusterConfig& c = plan.job.cluster;
  j["cluster"] = {{"workers", c.workers()},
                  {"servers", c.servers()},
                  {"consistency", c.consistency},
                  {"timeout_ms", c.timeout_ms},
                  {"server_worker_separate", c.server_worker_separate}};
  j["data"] = {{"dataset", plan.job.data.dataset}, {"shards", plan.job.data.shards}};
  j["layers"] = json::array();
  for (const auto& l : plan.layers) {
    json layer = {{"name", l.name},
                  {"type", l.type},
                  {"partition_dim", l.partition_dim},
                  {"params", l.params},
                  {"feature_size", l.feature_size},
                  {"forward_flops", l.forward_flops}};
    if (l.partition_dim == -1) layer["location"] = l.location;
    j["layers"].push_back(layer);
  }
  j["params"] = json::array();
  for (const auto& p : plan.params) {
    json param = {{"name", p.name},
                  {"shape", p.shape},
                  {"init", InitToJson(p.init)},
                  {"slices", p.slices},
                  {"lr_mult", p.lr_mult}};
    if (p.role == ParamRole::kRunningAverage) param["role"] = "running_average";
    j["params"].push_back(std::move(param));
  }
  // A plan may hold a million slices: each object is built in place
  // (an initializer list builds every pair as an array first).
  json::array_t& slices = (j["slices"] = json::array()).get_ref<json::array_t&>();
  slices.reserve(plan.slices.size());
  for (const auto& s : plan.slices) {
    json::object_t& slice = slices.emplace_back(json::object()).get_ref<json::object_t&>();
    slice.emplace("key", s.key);
    slice.emplace("param", s.param);
    slice.emplace("offset", s.offset);
    slice.emplace("count", s.count);
    slice.emplace("server", s.server);
  }
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

std::string HashOf(const json& content) { return HexU64(Fnv1a64(JsonText(content))); }

// An integer field of the plan, within T's range.
template <typename T>
Status IntField(const JsonFields& f, const json& obj, const std::string& at, const char* name, T* out) {
  if constexpr (std::is_unsigned_v<T>) {
    uint64_t v = 0;
    SHOAL_RETURN_IF_ERROR(f.Unsigned(obj, at, name, std::numeric_limits<T>::max(), &v));
    *out = static_cast<T>(v);
  } else {
    int64_t v = 0;
    SHOAL_RETURN_IF_ERROR(
        f.Int(obj, at, name, std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), &v));
    *out = static_cast<T>(v);
  }
  return Status::Ok();
}

Status ReadLayers(const JsonFields& f, const json& j, Plan* plan) {
  const json* list;
  SHOAL_RETURN_IF_ERROR(f.List(j, "", "layers", &list));
  for (const json& l : *list) {
    const std::string at = "layers[" + std::to_string(plan->layers.size()) + "].";
    LayerPlan layer;
    SHOAL_RETURN_IF_ERROR(f.String(l, at, "name", &layer.name));
    SHOAL_RETURN_IF_ERROR(f.String(l, at, "type", &layer.type));
    SHOAL_RETURN_IF_ERROR(IntField(f, l, at, "partition_dim", &layer.partition_dim));
    if (l.contains("location")) SHOAL_RETURN_IF_ERROR(IntField(f, l, at, "location", &layer.location));
    SHOAL_RETURN_IF_ERROR(IntField(f, l, at, "params", &layer.params));
    SHOAL_RETURN_IF_ERROR(IntField(f, l, at, "feature_size", &layer.feature_size));
    SHOAL_RETURN_IF_ERROR(f.Number(l, at, "forward_flops", 0, 1e300, &layer.forward_flops));
    plan->layers.push_back(layer);
  }
  return Status::Ok();
}

Status ReadInit(const JsonFields& f, const json& p, const std::string& at, ParamInit* init) {
  const json* j;
  SHOAL_RETURN_IF_ERROR(f.Get(p, at, "init", &j));
  const std::string in = at + "init.";
  std::string kind;
  SHOAL_RETURN_IF_ERROR(f.String(*j, in, "kind", &kind));
  if (kind != "uniform" && kind != "constant" && kind != "checkpoint")
    return f.Error(in + "kind", "is " + Quoted(kind, 40) + ", not uniform, constant or checkpoint");
  init->kind = kind == "uniform"    ? ParamInit::Kind::kUniform
               : kind == "constant" ? ParamInit::Kind::kConstant
                                    : ParamInit::Kind::kCheckpoint;
  double value = 0;
  SHOAL_RETURN_IF_ERROR(f.Number(*j, in, "value", -FLT_MAX, FLT_MAX, &value));
  init->value = static_cast<float>(value);
  if (init->kind != ParamInit::Kind::kCheckpoint) return Status::Ok();
  SHOAL_RETURN_IF_ERROR(f.String(*j, in, "checkpoint", &init->checkpoint));
  SHOAL_RETURN_IF_ERROR(f.String(*j, in, "param", &init->param));
  return f.Bool(*j, in, "transpose", &init->transpose);
}

Status ReadParams(const JsonFields& f, const json& j, Plan* plan) {
  const json* list;
  SHOAL_RETURN_IF_ERROR(f.List(j, "", "params", &list));
  for (const json& p : *list) {
    const std::string at = "params[" + std::to_string(plan->params.size()) + "].";
    ParamPlan pp;
    SHOAL_RETURN_IF_ERROR(f.String(p, at, "name", &pp.name));
    const json* shape;
    SHOAL_RETURN_IF_ERROR(f.List(p, at, "shape", &shape));
    for (const json& d : *shape) {
      int64_t dim = 0;
      SHOAL_RETURN_IF_ERROR(
          f.IntAt(d, at + "shape[" + std::to_string(pp.shape.size()) + "]", 0, INT32_MAX, &dim));
      pp.shape.push_back(static_cast<int>(dim));
    }
    SHOAL_RETURN_IF_ERROR(ReadInit(f, p, at, &pp.init));
    double lr_mult = 1.0;
    if (p.contains("lr_mult")) SHOAL_RETURN_IF_ERROR(f.Number(p, at, "lr_mult", 0, 1e3, &lr_mult));
    pp.lr_mult = static_cast<float>(lr_mult);
    if (p.contains("role")) {
      std::string role;
      SHOAL_RETURN_IF_ERROR(f.String(p, at, "role", &role));
      if (role != "running_average")
        return f.Error(at + "role",
                       "is '" + role + "'; a parameter's role is absent (trained) or 'running_average'");
      pp.role = ParamRole::kRunningAverage;
    }
    const json* slices;
    SHOAL_RETURN_IF_ERROR(f.List(p, at, "slices", &slices));
    for (const json& k : *slices) {
      uint64_t key = 0;
      SHOAL_RETURN_IF_ERROR(
          f.UnsignedAt(k, at + "slices[" + std::to_string(pp.slices.size()) + "]", UINT32_MAX, &key));
      pp.slices.push_back(static_cast<uint32_t>(key));
    }
    plan->params.push_back(pp);
  }
  return Status::Ok();
}

Status ReadSlices(const JsonFields& f, const json& j, Plan* plan) {
  const json* list;
  SHOAL_RETURN_IF_ERROR(f.List(j, "", "slices", &list));
  plan->slices.reserve(list->size());
  for (const json& s : *list) {
    const std::string at = "slices[" + std::to_string(plan->slices.size()) + "].";
    SlicePlan slice;
    SHOAL_RETURN_IF_ERROR(IntField(f, s, at, "key", &slice.key));
    SHOAL_RETURN_IF_ERROR(f.String(s, at, "param", &slice.param));
    SHOAL_RETURN_IF_ERROR(IntField(f, s, at, "offset", &slice.offset));
    SHOAL_RETURN_IF_ERROR(IntField(f, s, at, "count", &slice.count));
    SHOAL_RETURN_IF_ERROR(IntField(f, s, at, "server", &slice.server));
    plan->slices.push_back(slice);
  }
  return Status::Ok();
}

Status ReadProcesses(const JsonFields& f, const json& j, Plan* plan) {
  const json* list;
  SHOAL_RETURN_IF_ERROR(f.List(j, "", "workers", &list));
  for (const json& w : *list) {
    const std::string at = "workers[" + std::to_string(plan->workers.size()) + "].";
    WorkerPlan worker;
    SHOAL_RETURN_IF_ERROR(IntField(f, w, at, "id", &worker.id));
    SHOAL_RETURN_IF_ERROR(IntField(f, w, at, "group", &worker.group));
    SHOAL_RETURN_IF_ERROR(IntField(f, w, at, "rank", &worker.rank));
    if (w.contains("endpoint")) SHOAL_RETURN_IF_ERROR(f.String(w, at, "endpoint", &worker.endpoint));
    plan->workers.push_back(worker);
  }
  SHOAL_RETURN_IF_ERROR(f.List(j, "", "servers", &list));
  for (const json& s : *list) {
    const std::string at = "servers[" + std::to_string(plan->servers.size()) + "].";
    ServerPlan server;
    SHOAL_RETURN_IF_ERROR(IntField(f, s, at, "id", &server.id));
    SHOAL_RETURN_IF_ERROR(f.String(s, at, "endpoint", &server.endpoint));
    plan->servers.push_back(server);
  }
  return Status::Ok();
}

// Reads the plan's fields; an error names the field.
Status ReadContent(const JsonFields& f, const json& j, Plan* plan) {
  SHOAL_RETURN_IF_ERROR(f.String(j, "", "hash", &plan->hash, 64));
  std::string strategy;
  SHOAL_RETURN_IF_ERROR(f.String(j, "", "strategy", &strategy, 64));
  if (!ParseName(strategy, &plan->strategy))
    return f.Error("strategy", "is " + Quoted(strategy, 40) + ", not optimal, data or model");
  SHOAL_RETURN_IF_ERROR(f.String(j, "", "commit", &plan->commit, 256, 0));
  if (j.contains("planner")) plan->planner = j.at("planner");
  SHOAL_RETURN_IF_ERROR(ReadLayers(f, j, plan));
  SHOAL_RETURN_IF_ERROR(ReadParams(f, j, plan));
  SHOAL_RETURN_IF_ERROR(ReadSlices(f, j, plan));
  return ReadProcesses(f, j, plan);
}

Status Inconsistent(const std::string& source, const std::string& why) {
  return Status::InvalidArgument(source + ": inconsistent plan: " + why);
}

Status CheckEndpoint(const std::string& source, const std::string& who, const std::string& endpoint) {
  const std::string problem = EndpointProblem(endpoint);
  if (!problem.empty())
    return Inconsistent(source, who + " has endpoint " + Quoted(endpoint) + ": " + problem);
  return Status::Ok();
}

// The layers and parameters are the ones the job's net has.
Status CheckNet(const std::string& source, const Plan& plan) {
  std::unique_ptr<Net> net;
  SHOAL_RETURN_IF_ERROR(Net::Build(plan.job, &net, /*allocate_params=*/false));
  if (plan.layers.size() != net->layers().size())
    return Inconsistent(source, std::to_string(plan.layers.size()) + " layers for a net of " +
                                    std::to_string(net->layers().size()));
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    if (plan.layers[i].name != net->layers()[i]->name() || plan.layers[i].type != net->layers()[i]->type())
      return Inconsistent(source, "layer " + std::to_string(i) + " is " + Quoted(plan.layers[i].name) +
                                      ", the job's net has " + Quoted(net->layers()[i]->name()) + " there");
    if (net->layers()[i]->ReadsRecords() && plan.layers[i].partition_dim != 0)
      return Inconsistent(source, "layer " + Quoted(plan.layers[i].name) +
                                      " works on each worker's own records but has partition_dim " +
                                      std::to_string(plan.layers[i].partition_dim));
  }
  const std::vector<Param*> params = net->params();
  if (plan.params.size() != params.size())
    return Inconsistent(source, std::to_string(plan.params.size()) + " parameters for a net of " +
                                    std::to_string(params.size()));
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamPlan& pp = plan.params[i];
    if (pp.name != params[i]->name || pp.shape != params[i]->shape)
      return Inconsistent(source, "parameter " + Quoted(pp.name) + " " + ShapeToString(pp.shape) +
                                      " where the net has " + Quoted(params[i]->name) + " " +
                                      ShapeToString(params[i]->shape));
    if (pp.role != params[i]->role)
      return Inconsistent(source, "parameter " + Quoted(pp.name) + " is " +
                                      (pp.role == ParamRole::kTrained ? "trained" : "a running average") +
                                      " where the net's is not");
  }
  return Status::Ok();
}

// Workers in groups of M, servers in groups of nservers_per_group.
Status CheckProcesses(const std::string& source, const Plan& plan) {
  const ClusterConfig& c = plan.job.cluster;
  if (static_cast<int>(plan.workers.size()) != c.workers() ||
      static_cast<int>(plan.servers.size()) != c.servers())
    return Inconsistent(source, std::to_string(plan.workers.size()) + " workers and " +
                                    std::to_string(plan.servers.size()) + " servers where the job has " +
                                    std::to_string(c.workers()) + " and " + std::to_string(c.servers()));
  const int m = GroupSize(plan);
  if (c.workers() % m != 0)
    return Inconsistent(source, "groups of " + std::to_string(m) + " do not divide " +
                                    std::to_string(c.workers()) + " workers");
  for (size_t i = 0; i < plan.workers.size(); ++i) {
    const WorkerPlan& w = plan.workers[i];
    if (w.id != static_cast<int>(i) || w.rank < 0 || w.group < 0 || w.id != w.group * m + w.rank ||
        (m > 1 && w.endpoint.empty()))
      return Inconsistent(source,
                          "worker " + std::to_string(i) + " does not fit groups of " + std::to_string(m));
    if (!w.endpoint.empty())
      SHOAL_RETURN_IF_ERROR(CheckEndpoint(source, "worker " + std::to_string(i), w.endpoint));
  }
  for (size_t i = 0; i < plan.servers.size(); ++i) {
    if (plan.servers[i].id != static_cast<int>(i))
      return Inconsistent(source,
                          "server " + std::to_string(i) + " has id " + std::to_string(plan.servers[i].id));
    SHOAL_RETURN_IF_ERROR(CheckEndpoint(source, "server " + std::to_string(i), plan.servers[i].endpoint));
  }
  for (const auto& l : plan.layers)
    if (l.partition_dim < -1 || l.partition_dim > 1 || l.location < 0 || l.location >= m)
      return Inconsistent(source, "layer " + Quoted(l.name) + " has partition_dim " +
                                      std::to_string(l.partition_dim) + " and location " +
                                      std::to_string(l.location) + " (groups of " + std::to_string(m) + ")");
  return Status::Ok();
}

// Slices: keyed by their index, each within its parameter, and per server
// group each parameter's slices tile it from 0 to its end.
Status CheckSlices(const std::string& source, const Plan& plan) {
  const ClusterConfig& c = plan.job.cluster;
  const auto& params = plan.params;
  std::vector<std::vector<std::vector<const SlicePlan*>>> tiles(
      c.nserver_groups, std::vector<std::vector<const SlicePlan*>>(params.size()));
  for (size_t i = 0; i < plan.slices.size(); ++i) {
    const SlicePlan& s = plan.slices[i];
    const std::string slice = "slice " + std::to_string(i);
    if (s.key != i) return Inconsistent(source, slice + " has key " + std::to_string(s.key));
    if (s.server < 0 || s.server >= c.servers())
      return Inconsistent(
          source, slice + " is on server " + std::to_string(s.server) + " of " + std::to_string(c.servers()));
    const size_t size = NumElements(plan.params[s.param_index].shape);
    if (s.count == 0 || s.offset >= size || s.count > size - s.offset)
      return Inconsistent(source, slice + " covers [" + std::to_string(s.offset) + ", +" +
                                      std::to_string(s.count) + ") of " + Quoted(s.param) + ", which has " +
                                      std::to_string(size) + " floats");
    tiles[s.server / c.nservers_per_group][s.param_index].push_back(&s);
  }
  for (int group = 0; group < c.nserver_groups; ++group)
    for (size_t p = 0; p < params.size(); ++p) {
      auto& pieces = tiles[group][p];
      std::sort(pieces.begin(), pieces.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
      size_t next = 0;
      for (const SlicePlan* s : pieces) {
        if (s->offset != next) break;
        next += s->count;
      }
      if (next != NumElements(plan.params[p].shape))
        return Inconsistent(source, "the slices of server group " + std::to_string(group) + " do not cover " +
                                        Quoted(plan.params[p].name) + " exactly once");
      std::vector<uint32_t> keys;
      if (group == 0)
        for (const SlicePlan* s : pieces) keys.push_back(s->key);
      if (group == 0 && keys != plan.params[p].slices)
        return Inconsistent(source, "parameter " + Quoted(plan.params[p].name) +
                                        " does not list its server group 0 slices in offset order");
    }
  return Status::Ok();
}

}  // namespace

std::string PlanContentHash(const Plan& plan) { return HashOf(ContentToJson(plan)); }

json PlanToJson(const Plan& plan) {
  json j = ContentToJson(plan);
  j["hash"] = plan.hash;
  return j;
}

Status PlanFromJson(const json& j, const std::string& source, Plan* plan) {
  *plan = Plan();
  if (!j.is_object() || !j.contains("format") || j["format"] != "shoal-plan")
    return Status::InvalidArgument(source + ": not a shoal plan");
  const JsonFields f(source);
  int64_t version = 0;
  SHOAL_RETURN_IF_ERROR(f.Int(j, "", "version", 0, INT32_MAX, &version));
  if (version != kPlanFormatVersion)
    return Status::InvalidArgument(source + ": plan format version " + std::to_string(version) +
                                   ", this build reads " + std::to_string(kPlanFormatVersion) +
                                   " (plan the job again with this build's dl-plan)");
  SHOAL_RETURN_IF_ERROR(ReadContent(f, j, plan));
  // Hash the file as written: the summaries scripts read ("cluster", "data")
  // are not read back into the plan, so a rebuilt copy would miss their edits.
  json content = j;
  content.erase("hash");
  const std::string computed = HashOf(content);
  if (computed != plan->hash)
    return Status::Corruption(source + ": content hash " + computed + " does not match the recorded " +
                              Quoted(plan->hash, 40) + " (the plan was edited after dl-plan wrote it)");
  // Everything a process relies on without checking again.
  const auto job = j.find("job");
  if (job == j.end()) return Status::InvalidArgument(source + ": malformed plan: it has no field 'job'");
  SHOAL_RETURN_IF_ERROR(ParseJob(JsonDocument(*job, source + " (job)"), &plan->job));
  SHOAL_RETURN_IF_ERROR(CheckNet(source, *plan));
  SHOAL_RETURN_IF_ERROR(IndexPlan(plan).Within(source + ": inconsistent plan"));
  SHOAL_RETURN_IF_ERROR(CheckProcesses(source, *plan));
  SHOAL_RETURN_IF_ERROR(CheckSlices(source, *plan));
  return CheckPlanMemory(*plan).Within(source);
}

Status PlanText(const Plan& plan, std::string* text) {
  *text = PlanToJson(plan).dump(2) + "\n";
  if (text->size() <= kMaxPlanBytes) return Status::Ok();
  return Status::InvalidArgument(
      "the plan is " + std::to_string(text->size()) + " bytes, more than the " +
      std::to_string(kMaxPlanBytes) + " its readers take (" + std::to_string(plan.slices.size()) +
      " slices over " + std::to_string(plan.workers.size()) + " workers): fewer workers or fewer slices");
}

Status LoadPlan(const std::string& path, Plan* plan) {
  std::string text;
  SHOAL_RETURN_IF_ERROR(ReadFile(path, &text, kMaxPlanBytes));
  json j;
  SHOAL_RETURN_IF_ERROR(ParseJson(text, Quoted(path), &j, kMaxPlanBytes));
  return PlanFromJson(j, path, plan);
}

}  // namespace shoal
