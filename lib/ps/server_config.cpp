#include "ps/server_config.h"

#include <algorithm>
#include <map>

#include "plan/partition.h"

namespace shoal {
namespace {

// The server ids that server `server` syncs with (several server groups).
std::vector<int> SyncNeighbours(const ClusterConfig& c, int server) {
  const int groups = c.nserver_groups, per_group = c.nservers_per_group;
  const int group = server / per_group, index = server % per_group;
  std::vector<int> neighbours;
  for (int g = 0; g < groups; ++g) {
    if (g == group) continue;
    // A ring syncs with the next group only (two groups: each other).
    if (c.sync_topology == SyncTopology::kRing && g != (group + 1) % groups) continue;
    neighbours.push_back(g * per_group + index);
  }
  return neighbours;
}

// The slices server c.id holds, and the layers they make, in key order:
// parameters come in the net's order, so layers do too. Fills `layer_of`:
// key -> index in c->layers.
void AddSlices(const Plan& plan, ServerConfig* c, std::map<uint32_t, int>* layer_of) {
  for (const SlicePlan& sp : plan.slices) {
    if (sp.server != c->id) continue;
    const ParamPlan& param = plan.params[sp.param_index];
    SliceSpec s{sp.key,      sp.param,   sp.param,      sp.offset, sp.count,
                param.shape, param.init, param.lr_mult, param.role};
    if (param.slices.size() > 1) s.name += "[" + std::to_string(sp.offset) + "]";
    c->slices.push_back(s);
    if (s.frozen()) continue;
    const std::string& layer = LayerOfParam(plan, param).name;
    if (c->layers.empty() || c->layers.back().name != layer) {
      c->layers.emplace_back();
      c->layers.back().name = layer;
      c->layers.back().held.resize(c->workers);
    }
    c->layers.back().keys.push_back(sp.key);
    (*layer_of)[sp.key] = static_cast<int>(c->layers.size()) - 1;
  }
}

// Who holds what, worked out once per worker, and the largest request a
// worker or tool may send.
void AddHolders(const Plan& plan, const std::map<uint32_t, int>& layer_of, ServerConfig* c) {
  c->holders_per_key.assign(plan.slices.size(), 0);
  c->serves.assign(c->workers, false);
  c->held.resize(c->workers);
  c->exchanged.resize(c->workers);
  std::map<uint32_t, size_t> count_of;
  for (const SliceSpec& s : c->slices) count_of[s.key] = s.count;
  size_t largest = 0, all = 0;
  for (const auto& [key, count] : count_of) all += kEntryHeaderBytes + 4 * count;
  for (const auto& w : plan.workers) {
    c->worker_server_group.push_back(ServerGroupOf(plan, w.id));
    c->serves[w.id] = c->worker_server_group.back() == c->group;
    c->served += c->serves[w.id];
    size_t bytes = 0;
    for (uint32_t key : KeysHeldBy(plan, w.id)) {
      ++c->holders_per_key[key];
      if (!count_of.count(key)) continue;  // on another server
      c->held[w.id].push_back(key);
      bytes += kEntryHeaderBytes + 4 * count_of[key];
      auto layer = layer_of.find(key);
      if (layer == layer_of.end()) continue;  // frozen
      c->exchanged[w.id].push_back(key);
      c->layers[layer->second].held[w.id].push_back(key);
    }
    largest = std::max(largest, bytes);
  }
  for (LayerSpec& l : c->layers)
    for (int w = 0; w < c->workers; ++w) l.holders += !l.held[w].empty();
  // A worker's update of everything it holds, or a tool's put of every
  // slice, in fp32, and a metric or a stats text of up to 64 KiB.
  c->max_request_bytes = kHeaderBytes + std::max(largest, all) + (64u << 10);
}

}  // namespace

Status MakeServerConfig(const Plan& plan, int id, ServerConfig* out) {
  ServerConfig c;
  const ClusterConfig& cluster = plan.job.cluster;
  if (id < 0 || id >= static_cast<int>(plan.servers.size()))
    return Status::InvalidArgument("server id " + std::to_string(id) + " is not in the plan (it has " +
                                   std::to_string(plan.servers.size()) + " servers)");
  c.id = id;
  c.group = ServerGroupOfServer(plan, id);
  c.endpoint = plan.servers[id].endpoint;
  c.tls_dir = cluster.tls_dir;
  c.tls = TlsIdentityFor(cluster.tls_dir, "server", id);
  c.plan_hash = plan.hash;
  c.plan_hash_value = plan.hash_value();
  c.workers = static_cast<int>(plan.workers.size());
  c.consistency = cluster.consistency;
  c.staleness = static_cast<uint64_t>(cluster.staleness);
  c.easgd_alpha = cluster.easgd_alpha;
  c.updater = UpdaterFromTrain(plan.job.train, c.workers);
  c.wire = cluster.wire;
  c.timeout_ms = cluster.timeout_ms;
  c.lease_ms = cluster.lease_ms;
  c.checkpoint_every = plan.job.train.checkpoint_every;
  c.steps = static_cast<uint64_t>(std::max(plan.job.train.steps, 0));
  c.seed = plan.job.train.seed;
  c.servers = static_cast<int>(plan.servers.size());
  c.servers_per_group = cluster.nservers_per_group;

  std::map<uint32_t, int> layer_of;
  AddSlices(plan, &c, &layer_of);
  AddHolders(plan, layer_of, &c);
  if (cluster.nserver_groups > 1) {
    c.sync_freq = cluster.sync_freq;
    c.sync_neighbours = SyncNeighbours(cluster, id);
    for (int n : c.sync_neighbours) c.sync_endpoints.push_back(plan.servers[n].endpoint);
    c.keys_per_group = plan.slices.size() / cluster.nserver_groups;
  }
  *out = std::move(c);
  return Status::Ok();
}

}  // namespace shoal
