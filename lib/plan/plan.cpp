#include "plan/plan.h"

#include <memory>

#include "core/build_info.h"
#include "graph/net.h"
#include "plan/partition.h"

namespace shoal {

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
  plan->commit = BuildCommit();
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
    if (layer.ReadsRecords() && l.partition_dim != 0)
      return Status::InvalidArgument("layer '" + l.name + "' (" + l.type + ") works on each worker's own records: " +
                                     "it takes partition_dim 0, not " + std::to_string(l.partition_dim));
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
  // The job as every process will read it: the layers' fields resolved too.
  plan->job.resolved = net->ResolvedJob(job);
  plan->hash = PlanContentHash(*plan);
  return Status::Ok();
}

Status MakeDataParallelPlan(const JobConfig& job, const PlanOptions& options, Plan* plan) {
  return MakePlan(job, options, Partition(), plan);
}

}  // namespace shoal
