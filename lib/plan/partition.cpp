#include "plan/partition.h"

namespace shoal {

Range SplitRange(size_t units, int parts, int index) {
  return {units * index / parts, units * (index + 1) / parts};
}

int GroupSize(const Plan& plan) { return plan.group_size; }

const LayerPlan& LayerOfParam(const Plan& plan, const ParamPlan& param) {
  return plan.layers.at(param.layer);
}

Range HeldRows(const Plan& plan, const ParamPlan& param, int rank) {
  const LayerPlan& layer = LayerOfParam(plan, param);
  const size_t rows = param.shape.empty() ? 1 : static_cast<size_t>(param.shape[0]);
  if (layer.partition_dim == 1) return SplitRange(rows, GroupSize(plan), rank);
  if (layer.partition_dim == -1 && layer.location != rank) return {};
  return {0, rows};
}

Range HeldFloats(const Plan& plan, const ParamPlan& param, int rank) {
  const Range rows = HeldRows(plan, param, rank);
  const size_t row = NumElements(param.shape) / (param.shape.empty() ? 1 : param.shape[0]);
  return {rows.begin * row, rows.end * row};
}

int ServerGroupOf(const Plan& plan, int worker) {
  return plan.workers.at(worker).group % plan.job.cluster.nserver_groups;
}

int ServerGroupOfServer(const Plan& plan, int server) { return server / plan.job.cluster.nservers_per_group; }

std::vector<int> ServersOf(const Plan& plan, int worker) {
  std::vector<int> servers;
  const int group = ServerGroupOf(plan, worker);
  for (const auto& s : plan.servers)
    if (ServerGroupOfServer(plan, s.id) == group) servers.push_back(s.id);
  return servers;
}

int ServerInWorker(const Plan& plan, int worker) {
  return plan.job.cluster.server_worker_separate ? -1 : worker;
}

std::string InProcessEndpoint(int server) { return "inproc://shoal-server-" + std::to_string(server); }

std::vector<uint32_t> KeysHeldBy(const Plan& plan, int worker) {
  const int rank = plan.workers.at(worker).rank, group = ServerGroupOf(plan, worker);
  std::vector<uint32_t> keys;
  for (const auto& s : plan.slices) {
    if (ServerGroupOfServer(plan, s.server) != group) continue;
    const Range held = HeldFloats(plan, plan.params[s.param_index], rank);
    if (s.offset >= held.begin && s.offset + s.count <= held.end) keys.push_back(s.key);
  }
  return keys;  // slices are listed by key
}

std::vector<int> HoldersPerKey(const Plan& plan) {
  std::vector<int> holders(plan.slices.size(), 0);
  for (const auto& w : plan.workers)
    for (uint32_t key : KeysHeldBy(plan, w.id)) ++holders[key];
  return holders;
}

}  // namespace shoal
