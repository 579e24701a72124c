#include "plan/plan.h"

#include <cstdio>
#include <memory>
#include <unordered_map>

#include "core/build_info.h"
#include "core/text.h"
#include "graph/net.h"
#include "graph/param_fields.h"
#include "plan/partition.h"

namespace shoal {

uint64_t Plan::hash_value() const { return std::stoull(hash, nullptr, 16); }

const ParamPlan* Plan::FindParam(const std::string& name) const {
  for (const auto& p : params)
    if (p.name == name) return &p;
  return nullptr;
}

std::string EndpointProblem(const std::string& endpoint) {
  if (endpoint.size() > 512 || !IsUtf8(endpoint) || endpoint.find("://") == std::string::npos)
    return "it is not a transport://address";
  // host:port with a port others can dial (0 would be any free one: nobody could find it).
  if (endpoint.rfind("tcp://", 0) == 0 || endpoint.rfind("tls+tcp://", 0) == 0) {
    const size_t start = endpoint.find("://") + 3, colon = endpoint.rfind(':');
    const std::string port = endpoint.substr(colon + 1);
    if (colon < start || port.empty() || port.size() > 5 ||
        port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) < 1 ||
        std::stoi(port) > 65535)
      return "its port is not 1 to 65535";
    const std::string host = endpoint.substr(start, colon - start);
    if (host.empty()) return "it names no host";
    // An IPv6 address in brackets, or a name or IPv4 address with none.
    const bool bracketed = host.size() > 2 && host.front() == '[' && host.back() == ']';
    const std::string inside = bracketed ? host.substr(1, host.size() - 2) : host;
    if (inside.find_first_of("[]") != std::string::npos)
      return "its host is neither a name nor an address in brackets";
  }
  return "";
}

namespace {

// An endpoint given on a command line.
Status CheckEndpoint(const std::string& what, const std::string& endpoint) {
  const std::string problem = EndpointProblem(endpoint);
  if (!problem.empty()) return Status::InvalidArgument(what + ", " + Quoted(endpoint) + ": " + problem);
  return Status::Ok();
}

std::string GiB(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", bytes / (1u << 30));
  return text;
}

}  // namespace

Status CheckPlanMemory(const Plan& plan) {
  const int m = GroupSize(plan);
  const double batch = plan.job.train.batch_size;
  double all_params = 0, all_features = 0;
  for (const auto& p : plan.params) all_params += NumElements(p.shape);
  for (const auto& l : plan.layers) all_features += l.feature_size;
  for (int r = 0; r < m; ++r) {
    // Its parameters (values and gradients), and its features (data and gradients) of its records.
    double floats = 0;
    for (const auto& p : plan.params) floats += 2.0 * HeldFloats(plan, p, r).size();
    for (const auto& l : plan.layers) {
      const double records = l.partition_dim == 0 ? batch : batch * m;
      const double share = l.partition_dim == 1    ? 1.0 / m
                           : l.partition_dim == -1 ? (l.location == r ? 1.0 : 0.0)
                                                   : 1.0;
      floats += 2.0 * records * l.feature_size * share;
    }
    // Worker 0 of each group may evaluate: the whole net, in batches of 500 records.
    if (r == 0) floats += all_params + 500.0 * all_features;
    if (4.0 * floats > kMaxProcessBytes)
      return Status::InvalidArgument(
          "worker rank " + std::to_string(r) + " of a group would need " + GiB(4.0 * floats) +
          " for its parameters and features; a process may use at most " + GiB(kMaxProcessBytes) +
          " (docs/job-file.md): a smaller batch or model, "
          "or more workers to split it");
  }
  std::vector<double> server_floats(plan.servers.size(), 0.0);
  for (const auto& s : plan.slices) server_floats[s.server] += s.count;
  for (size_t s = 0; s < server_floats.size(); ++s)
    if (4.0 * 4 * server_floats[s] > kMaxProcessBytes)  // value, gradient sum and up to two state buffers
      return Status::InvalidArgument("server " + std::to_string(s) + " would need " +
                                     GiB(16.0 * server_floats[s]) +
                                     " for its slices; a process may use at most " + GiB(kMaxProcessBytes) +
                                     " (docs/job-file.md): more servers");
  return Status::Ok();
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

Status IndexPlan(Plan* plan) {
  plan->group_size = 1;  // ranks beyond the workers are refused later (CheckProcesses)
  const int workers = static_cast<int>(plan->workers.size());
  for (const auto& w : plan->workers)
    if (w.rank >= 0 && w.rank < workers) plan->group_size = std::max(plan->group_size, w.rank + 1);
  std::unordered_map<std::string, size_t> layers, params;
  for (size_t i = 0; i < plan->layers.size(); ++i) layers.emplace(plan->layers[i].name, i);
  for (size_t i = 0; i < plan->params.size(); ++i) {
    ParamPlan& p = plan->params[i];
    params.emplace(p.name, i);
    // A parameter is named "<layer>.<name>".
    auto layer = layers.find(p.name.substr(0, p.name.rfind('.')));
    if (layer == layers.end())
      return Status::InvalidArgument("parameter " + Quoted(p.name) + " belongs to no layer");
    p.layer = layer->second;
  }
  for (size_t i = 0; i < plan->slices.size(); ++i) {
    SlicePlan& s = plan->slices[i];
    auto param = params.find(s.param);
    if (param == params.end())
      return Status::InvalidArgument("slice " + std::to_string(i) +
                                     " belongs to no parameter: " + Quoted(s.param));
    s.param_index = param->second;
  }
  return Status::Ok();
}

Status PlaceEndpoints(const PlanOptions& options, bool grouped, Plan* plan) {
  const ClusterConfig& c = plan->job.cluster;
  const int servers = static_cast<int>(plan->servers.size()),
            workers = static_cast<int>(plan->workers.size());
  for (const auto& e : options.endpoints) SHOAL_RETURN_IF_ERROR(CheckEndpoint("an endpoint given", e));
  for (const auto& e : options.worker_endpoints)
    SHOAL_RETURN_IF_ERROR(CheckEndpoint("a worker endpoint given", e));
  // Loopback ports follow base_port: one per server, then one per worker.
  if (options.endpoints.empty() || (grouped && options.worker_endpoints.empty())) {
    const int64_t last = static_cast<int64_t>(options.base_port) + servers + workers - 1;
    if (options.base_port < 1 || last > 65535)
      return Status::InvalidArgument("ports " + std::to_string(options.base_port) + ".." +
                                     std::to_string(last) + " for " + std::to_string(servers) +
                                     " servers and " + std::to_string(workers) +
                                     " workers run past 65535: give a lower base port");
  }
  if (!options.endpoints.empty() && static_cast<int>(options.endpoints.size()) != servers)
    return Status::InvalidArgument("the job has " + std::to_string(servers) + " servers but " +
                                   std::to_string(options.endpoints.size()) + " endpoints were given");
  for (ServerPlan& server : plan->servers)
    server.endpoint =
        options.endpoints.empty() ? Loopback(c, options.base_port + server.id) : options.endpoints[server.id];
  // Groups of one need no endpoints; given, they say where the workers run.
  if (grouped || !options.worker_endpoints.empty()) {
    if (!options.worker_endpoints.empty() && static_cast<int>(options.worker_endpoints.size()) != workers)
      return Status::InvalidArgument("the job has " + std::to_string(workers) + " workers but " +
                                     std::to_string(options.worker_endpoints.size()) +
                                     " worker endpoints were given");
    for (auto& w : plan->workers)
      w.endpoint = options.worker_endpoints.empty() ? Loopback(c, options.base_port + servers + w.id)
                                                    : options.worker_endpoints[w.id];
  }
  return Status::Ok();
}

namespace {

// The plan's layers, as the partition places them on groups of `m`.
Status AddLayers(const Net& net, const Partition& partition, int m, Plan* plan) {
  const size_t n_layers = net.layers().size();
  if ((!partition.dims.empty() && partition.dims.size() != n_layers) ||
      (!partition.locations.empty() && partition.locations.size() != n_layers))
    return Status::InvalidArgument("a partition of " + std::to_string(partition.dims.size()) +
                                   " layers for a net of " + std::to_string(n_layers));
  for (size_t i = 0; i < n_layers; ++i) {
    const Layer& layer = *net.layers()[i];
    LayerPlan l;
    l.name = layer.name();
    l.type = layer.type();
    l.partition_dim = partition.dims.empty() ? 0 : partition.dims[i];
    l.location = partition.locations.empty() ? 0 : partition.locations[i];
    if (layer.ReadsRecords() && l.partition_dim != 0)
      return Status::InvalidArgument("layer '" + l.name + "' (" + l.type +
                                     ") works on each worker's own records: " +
                                     "it takes partition_dim 0, not " + std::to_string(l.partition_dim));
    if (l.location < 0 || l.location >= m)
      return Status::InvalidArgument("layer '" + l.name + "': location " + std::to_string(l.location) +
                                     " is not a rank of a group of " + std::to_string(m));
    l.params = layer.param_count();
    l.feature_size = layer.feature_size();
    l.forward_flops = layer.ForwardFlopsPerRecord();
    plan->layers.push_back(l);
  }
  return Status::Ok();
}

// Every slice of the plan, in key order: each server group holds a whole
// copy, and each server holds 1/S of every range a rank holds, in slices of
// at most slice_floats. `slice(group, param, offset, count, server)`.
template <typename Slice>
void ForEachSlice(const ClusterConfig& c, int m, const Plan& plan, Slice slice) {
  const int per_group = c.nservers_per_group;
  for (int group = 0; group < c.nserver_groups; ++group) {
    for (size_t p = 0; p < plan.params.size(); ++p) {
      size_t begin = 0;
      for (size_t end : RankBoundaries(plan, plan.params[p], m)) {
        for (int piece = 0; piece < per_group; ++piece) {
          const Range part = SplitRange(end - begin, per_group, piece);
          for (size_t offset = begin + part.begin; offset < begin + part.end; offset += c.slice_floats)
            slice(group, p, offset, std::min<size_t>(c.slice_floats, begin + part.end - offset),
                  group * per_group + piece);
        }
        begin = end;
      }
    }
  }
}

// Cuts every parameter into slices and gives them to the servers (see
// ForEachSlice); the first group's slices are the ones a parameter lists
// (and the ones checkpoints hold). The servers' shares are equal, and every
// worker updates every server at every step (asynchronous servers count
// versions by the updates they take). Fails, before it makes any, where the
// slices would be more than kMaxPlanSlices.
Status AddSlices(const ClusterConfig& c, int m, Plan* plan) {
  size_t count = 0, floats = 0;  // counted, not made: a tiny slice_floats would ask for millions
  ForEachSlice(c, m, *plan, [&](int group, size_t, size_t, size_t n, int) {
    ++count;
    if (group == 0) floats += n;  // each server group holds a copy
  });
  if (count > kMaxPlanSlices)
    return Status::InvalidArgument(
        "cluster.slice_floats " + std::to_string(c.slice_floats) + " cuts the parameters' " +
        std::to_string(floats) + " floats into " + std::to_string(count) + " slices, more than the " +
        std::to_string(kMaxPlanSlices) + " a plan holds: a larger cluster.slice_floats");
  plan->slices.reserve(count);
  ForEachSlice(c, m, *plan, [&](int group, size_t p, size_t offset, size_t n, int server) {
    SlicePlan s;
    s.key = static_cast<uint32_t>(plan->slices.size());
    s.param = plan->params[p].name;
    s.offset = offset;
    s.count = n;
    s.param_index = p;
    s.server = server;
    if (group == 0) plan->params[p].slices.push_back(s.key);
    plan->slices.push_back(s);
  });
  return Status::Ok();
}

}  // namespace

bool ExchangeInStep(int group_size, int workers, const Net& net) {
  return group_size > 1 || (!net.SyncingLayer().empty() && workers > 1);
}

Status WorkersExchange(const Plan& plan, bool* exchange) {
  std::unique_ptr<Net> net;
  SHOAL_RETURN_IF_ERROR(Net::Build(plan.job, &net, /*allocate_params=*/false));
  *exchange = ExchangeInStep(plan.group_size, static_cast<int>(plan.workers.size()), *net);
  return Status::Ok();
}

Status MakePlan(const JobConfig& job, const PlanOptions& options, const Partition& partition, Plan* plan) {
  std::unique_ptr<Net> net;
  SHOAL_RETURN_IF_ERROR(Net::Build(job, &net, /*allocate_params=*/false));
  *plan = Plan();
  plan->job = job;
  plan->strategy = partition.strategy;
  plan->commit = BuildCommit();
  plan->planner = partition.report;
  const ClusterConfig& c = job.cluster;
  const int m = partition.group_size;
  if (m < 1 || c.workers() % m != 0)
    return Status::InvalidArgument("groups of " + std::to_string(m) + " do not divide the job's " +
                                   std::to_string(c.workers()) + " workers");
  SHOAL_RETURN_IF_ERROR(AddLayers(*net, partition, m, plan));
  for (int w = 0; w < c.workers(); ++w) plan->workers.push_back({w, w / m, w % m, ""});
  for (Param* p : net->params()) {
    SHOAL_RETURN_IF_ERROR(CheckInitFrom(*p));
    plan->params.push_back({p->name, p->shape, p->init, {}, p->lr_mult, p->role});
  }
  SHOAL_RETURN_IF_ERROR(IndexPlan(plan));
  SHOAL_RETURN_IF_ERROR(AddSlices(c, m, plan));
  for (int i = 0; i < c.servers(); ++i) plan->servers.push_back({i, ""});
  // Statistics summed over every worker's batch need the workers in step
  // (BSP), each with its own records whole (groups of one), and their endpoints.
  const std::string syncing = net->SyncingLayer();
  if (!syncing.empty() && c.consistency != ConsistencyModel::kBsp)
    return Status::InvalidArgument("layer '" + syncing +
                                   "' sums its statistics over the workers (sync: true), which needs "
                                   "cluster.consistency bsp");
  if (!syncing.empty() && m > 1)
    return Status::InvalidArgument("layer '" + syncing +
                                   "' sums its statistics over the workers (sync: true), " +
                                   "which needs groups of one worker, not " + std::to_string(m) +
                                   ": plan it data parallel (--strategy data)");
  SHOAL_RETURN_IF_ERROR(PlaceEndpoints(options, ExchangeInStep(m, c.workers(), *net), plan));
  SHOAL_RETURN_IF_ERROR(CheckPlanMemory(*plan));
  // The job as every process will read it: the layers' fields resolved too.
  plan->job.resolved = net->ResolvedJob(job);
  plan->hash = PlanContentHash(*plan);
  return Status::Ok();
}

Status MakeDataParallelPlan(const JobConfig& job, const PlanOptions& options, Plan* plan) {
  return MakePlan(job, options, Partition(), plan);
}

}  // namespace shoal
