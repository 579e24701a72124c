#include "plan/cost_model.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "config/job.h"
#include "graph/net.h"
#include "plan/lanes.h"

namespace shoal {
namespace {

constexpr double kBytesPerFloat = 4.0;

// Where a feature lives within a group.
enum class Layout {
  kRows,        // each worker holds its records' whole vectors (data parallel)
  kColumns,     // each worker holds a slice of every record's vector (model parallel)
  kOne,         // one worker holds everything (no partition)
  kReplicated,  // every worker holds everything (what a model-parallel layer with a full dependency reads)
};

// The largest and smallest share of a feature (or of parameters) a rank of a
// group holds when `units` are dealt out as evenly as they go (SplitRange).
struct Shares {
  double min, max;
};
Shares SplitShares(double units, int m) {
  if (units <= 0.0) return {1.0 / m, 1.0 / m};
  return {std::floor(units / m) / units, std::ceil(units / m) / units};
}

Layout Holds(Choice c) {
  return c == Choice::kData ? Layout::kRows : c == Choice::kModel ? Layout::kColumns : Layout::kOne;
}

Layout Needs(Choice c, Dependency dep) {
  if (c == Choice::kData) return Layout::kRows;
  if (c == Choice::kNone) return Layout::kOne;
  return dep == Dependency::kFull ? Layout::kReplicated : Layout::kColumns;
}

// Moving x floats from one layout to another within a group of m: the floats
// through the busiest worker's link, the floats through the whole group, and
// the message steps on the critical path.
struct Move {
  double busiest = 0.0, group_total = 0.0, steps = 0.0;
  bool every_rank = true;  // every rank as busy as the busiest (else one: a scatter, gather or send)
};

// `shares`: of the columns, when either side is columns.
Move Relayout(Layout have, Layout need, bool same_rank, double x, int m, Shares shares) {
  const double others = (m - 1.0) / m;
  if (m == 1 || have == need) {
    if (have == Layout::kOne && need == Layout::kOne && !same_rank) return {x, x, 1.0, false};
    return {};
  }
  if (need == Layout::kReplicated) {
    if (have == Layout::kOne) return {x, x * (m - 1.0), m - 1.0, false};  // broadcast, pipelined
    // All-gather: the rank holding least receives most.
    const double missing = have == Layout::kColumns ? 1.0 - shares.min : others;
    return {x * missing, x * (m - 1.0), m - 1.0};
  }
  if (have == Layout::kOne || need == Layout::kOne)
    return {x * others, x * others, m - 1.0, false};  // scatter, gather
  // All-to-all: rows -> columns, a rank receives its columns of the others'
  // records; columns -> rows, the others' columns of its records.
  const double busiest = have == Layout::kRows ? x * others * shares.max : x / m * (1.0 - shares.min);
  return {busiest, x * others, m - 1.0};
}

// One leg of a relayout through the network: a group's ranks fill nodes of
// workers_per_node in order, so peers on the same node exchange in memory;
// the busiest NIC, the backplane or a rack's uplink bounds the rest.
double FeatureLegSeconds(const Move& move, const Grouping& g, const ClusterProfile& p) {
  // m > 1 here: a group of one moves nothing.
  const int m = g.group_size, k = std::min(p.workers_per_node, g.workers);
  if (m <= k && k % m == 0) return 0.0;  // every group lies within a node
  // A group over several nodes: a rank's peers beyond its node (all, when groups straddle nodes);
  // a node's ranks of the group all send alike in a collective, one sends in a scatter or gather.
  const double off_node = m > k ? (m - k) / (m - 1.0) : 1.0;
  const double senders = move.every_rank ? std::min(k, m) : 1.0;
  double leg = senders * move.busiest * off_node * kBytesPerFloat / p.bytes_per_second();
  if (p.backplane_gbps > 0)
    leg = std::max(
        leg, move.group_total * g.groups() * off_node * kBytesPerFloat / p.backplane_bytes_per_second());
  const double rack_workers = static_cast<double>(p.nodes_per_rack) * k;
  if (p.nodes_per_rack > 0 && m > rack_workers)
    leg = std::max(leg, (move.every_rank ? rack_workers : 1.0) * move.busiest * (m - rack_workers) /
                            (m - 1.0) * kBytesPerFloat / p.uplink_bytes_per_second());
  return leg;
}

}  // namespace

void LayerCost::Add(const LayerCost& o) {
  overlapped = overlapped && o.overlapped;
  compute_s += o.compute_s;
  param_s += o.param_s;
  feature_s += o.feature_s;
  backward_s += o.backward_s;
  param_floats += o.param_floats;
  param_latency_s += o.param_latency_s;
  server_s += o.server_s;
  param_bytes_out += o.param_bytes_out;
  param_bytes_in += o.param_bytes_in;
  feature_bytes_in += o.feature_bytes_in;
  feature_bytes_out += o.feature_bytes_out;
  param_floats_total += o.param_floats_total;
  feature_floats_total += o.feature_floats_total;
}

std::vector<LayerFacts> CollectLayerFacts(const JobConfig& job, const Net& net) {
  std::map<std::string, const LayerConfig*> config;
  for (const auto& c : job.layers) config[c.name] = &c;
  std::map<std::string, int> index;
  std::vector<LayerFacts> facts;
  for (const auto& layer : net.layers()) {
    LayerFacts f;
    f.name = layer->name();
    f.type = layer->type();
    f.params = static_cast<double>(layer->param_count());
    f.frozen = !layer->params().empty();
    for (const Param& p : layer->params()) f.frozen = f.frozen && p.lr_mult == 0.0f;
    f.feature = static_cast<double>(layer->feature_size());
    f.backward_flops = layer->BackwardFlopsPerRecord();
    f.flops = layer->ForwardFlopsPerRecord() + f.backward_flops;
    f.rows_per_record = layer->RowsPerRecord();
    f.chained_flops = layer->ChainedFlopsPerRecord();
    f.inner = layer->ProductInner(false);
    f.winograd_inner = layer->ProductInner(true);
    f.winograd_units = layer->WinogradFromUnits();
    f.wants_grad = layer->WantsGrad();
    f.is_input = dynamic_cast<const DataLayer*>(layer.get()) != nullptr;
    f.rows_only = layer->ReadsRecords();
    f.group_exchange = layer->GroupExchangePerStep();
    const auto& srcs = config.at(f.name)->srclayers;
    for (size_t k = 0; k < srcs.size(); ++k) {
      f.srcs.push_back(index.at(srcs[k]));
      f.deps.push_back(layer->SourceDependency(k));
    }
    const bool follower = f.deps.size() == 1 && f.deps[0] == Dependency::kElementwise;
    f.splittable = !f.rows_only && (layer->SplitsOutputs() || follower);
    // A follower is split as its source is (lib/net/placement.h).
    f.units = follower && !layer->SplitsOutputs() ? facts[f.srcs[0]].units : layer->out_shape()[0];
    index[f.name] = static_cast<int>(facts.size());
    facts.push_back(f);
  }
  return facts;
}

double StragglerFactor(const Grouping& g, const ClusterProfile& p) {
  // A spread measured on steps of compute_cv_seconds: independent slowdowns
  // even out over a longer step, as the square root of its length.
  double cv = p.compute_cv;
  if (p.compute_cv_seconds > 0.0 && g.step_compute_s > 0.0)
    cv = std::min(1.0, cv * std::sqrt(p.compute_cv_seconds / g.step_compute_s));
  auto slowest = [&](int n) { return n > 1 ? cv * std::sqrt(2.0 * std::log(n)) : 0.0; };
  const double across = g.staleness < 0 ? 0.0 : slowest(g.workers) / std::sqrt(g.staleness + 1.0);
  return 1.0 + std::max(slowest(g.group_size), across);
}

double StepComputeSeconds(const std::vector<LayerFacts>& layers, const Grouping& g, const ClusterProfile& p) {
  ClusterProfile steady = p;
  steady.compute_cv = 0.0;
  Grouping singles = g;
  singles.group_size = 1;
  double seconds = 0.0;
  for (const LayerFacts& layer : layers) seconds += NodeCost(layer, Choice::kData, singles, steady).compute_s;
  return seconds;
}

namespace {

// The share of a layer's work the busiest worker of a group does under `choice`.
double ShareOf(const LayerFacts& layer, Choice choice, int m) {
  return choice == Choice::kNone ? 1.0 : choice == Choice::kModel ? SplitShares(layer.units, m).max : 1.0 / m;
}

// The busiest worker's forward seconds for the layer.
double ComputeSeconds(const LayerFacts& layer, Choice choice, const Grouping& g, const ClusterProfile& p) {
  const int m = g.group_size;
  const double records = g.records_per_group();
  // A worker computes its records (data parallel) or its share of the group's;
  // a recurrence's chained products have only the batch's rows, the others
  // every step's at once.
  const double batch = choice == Choice::kData ? records / m : records;
  const double rows = batch * layer.rows_per_record;
  const double products =
      (layer.flops - layer.chained_flops) / p.FlopsPerSecond(layer.type, rows, layer.inner);
  const double winograd_products =
      (layer.flops - layer.chained_flops) / p.FlopsPerSecond(layer.type, rows, layer.winograd_inner);
  const double chain = layer.chained_flops / p.FlopsPerSecond(layer.type, batch);
  // A record's seconds for a part holding `part` of the layer's units: a
  // part that keeps winograd_units runs its products faster. The busiest
  // worker holds a split layer's larger part, unless the smaller, on the
  // direct kernel where the larger runs on Winograd's, takes longer.
  auto part_seconds = [&](double part) {
    const bool winograd =
        layer.winograd_units > 0.0 && std::round(layer.units * part) >= layer.winograd_units;
    return part * ((winograd ? winograd_products / p.winograd_speedup : products) + chain);
  };
  const Shares parts = choice == Choice::kModel ? SplitShares(layer.units, m) : Shares{1.0, 1.0};
  const double per_record = std::max(part_seconds(parts.max), part_seconds(parts.min));
  // A data-parallel worker computes 1/m of the group's records, the others all of them.
  const double share = choice == Choice::kData ? ShareOf(layer, choice, m) : 1.0;
  return per_record * records * share * StragglerFactor(g, p);
}

// The seconds of one leg of the parameter exchange (gradients out, or values
// back) for `per_worker` values of each of `total` replicas' values: as long as
// its busiest link.
double LegSeconds(Choice choice, double per_worker, double total, const Grouping& g,
                  const ClusterProfile& p) {
  // The workers of a node holding the layer share its NIC: all of them, or
  // for an unpartitioned layer the one rank of each group on it.
  const double node_workers = std::min(p.workers_per_node, g.workers);
  const double holders = choice == Choice::kNone ? std::ceil(node_workers / g.group_size) : node_workers;
  const double b = g.param_value_bytes, nic = p.bytes_per_second();
  // Servers with their workers (AllReduce, server_worker_separate: false): a
  // server beside every worker owns 1/N of every parameter, so a leg is a
  // reduce-scatter or an all-gather and what a node's own servers own stays on it.
  const int nodes = p.WorkerNodes(g.workers);
  const double away = g.bound_servers ? (nodes - 1.0) / nodes : 1.0;
  double leg = holders * per_worker * away * b / nic;
  // Servers on nodes of their own or beside workers: either way a server's
  // NIC takes its share in the direction the workers' NICs do not use.
  if (g.bound_servers)
    leg = std::max(leg, total / nodes * away * b / nic);
  else if (g.servers > 0)
    leg = std::max(leg, total / g.servers * b / p.server_bytes_per_second());
  if (p.backplane_gbps > 0) leg = std::max(leg, total * away * b / p.backplane_bytes_per_second());
  // Servers spread over the racks: a rack's workers send (R-1)/R of theirs out.
  const int racks = p.Racks(g.workers);
  if (racks > 1) leg = std::max(leg, total / racks * (racks - 1.0) / racks * b / p.uplink_bytes_per_second());
  // GPU workers stage their share through the host: gradients are copied out
  // before they are sent, values in after they arrive. Overlapped, the copies
  // stream beside the network (GeePS's background threads); otherwise each
  // leg waits for its copy (Theano-MPI's CUDA-aware MPI without GPUDirect).
  if (p.host_device_gbps > 0) {
    const double staging = per_worker * b / (p.host_device_gbps * 1e9 / 8.0);
    leg = g.overlap ? std::max(leg, staging) : leg + staging;
  }
  return leg;
}

// A server's seconds updating its share of the layer's values for `replicas` replicas.
double ServerSeconds(const LayerFacts& layer, int replicas, const Grouping& g, const ClusterProfile& p) {
  // Between the legs a server updates its share of the values, reading the
  // gradient from the message (b a value) and reading and writing the value
  // and the updater's arrays, and copies each replica's values into its
  // reply (4 read, b written). Under BSP the update, once the last replica's
  // gradient is in, adds it to the others' sum (4 more); otherwise each
  // replica's update is applied on its own. Every server group updates a
  // whole copy for its share of the replicas.
  const int servers = g.bound_servers ? g.workers : g.servers;
  if (p.server_memory_gb_per_s <= 0.0 || servers <= 0) return 0.0;
  const ServerWork& w = g.server_work;
  const double b = g.param_value_bytes;
  const double update = b + 8.0 + 8.0 * w.updater_states, reply = 4.0 + b;
  const double bytes =
      w.updates_alone ? replicas * (update + reply) : w.server_groups * (update + 4.0) + replicas * reply;
  return g.exchanges_per_step * layer.params / servers * bytes / (p.server_memory_gb_per_s * 1e9);
}

}  // namespace

LayerCost NodeCost(const LayerFacts& layer, Choice choice, const Grouping& g, const ClusterProfile& p) {
  LayerCost cost;
  cost.compute_s = ComputeSeconds(layer, choice, g, p);
  if (layer.flops > 0.0) cost.backward_s = cost.compute_s * layer.backward_flops / layer.flops;
  cost.overlapped = g.overlap;
  // Sums over every worker's batch (groups of one: MakePlan): each round
  // sends every other worker the same floats, and waits for theirs.
  const Layer::GroupExchange& sync = layer.group_exchange;
  if (choice == Choice::kData && g.workers > 1 && sync.rounds > 0) {
    Grouping all = g;
    all.group_size = g.workers;
    const double peers = g.workers - 1.0;
    const Move move{peers * sync.floats, g.workers * peers * sync.floats, static_cast<double>(sync.rounds),
                    true};
    const double seconds = FeatureLegSeconds(move, all, p) + move.steps * p.latency_seconds();
    cost.feature_s += seconds;
    cost.backward_s += seconds * sync.backward_rounds / sync.rounds;
    cost.feature_bytes_in = cost.feature_bytes_out = move.busiest * kBytesPerFloat;
    cost.feature_floats_total = move.group_total;
  }
  if (layer.params == 0.0 || layer.frozen) return cost;
  // Replicas of the parameters that the servers keep consistent; every
  // replica's gradients go to the servers (one leg), its values come back
  // (the other).
  const int replicas = choice == Choice::kData ? g.workers : g.groups();
  const double per_worker =
      choice == Choice::kModel ? layer.params * ShareOf(layer, choice, g.group_size) : layer.params;
  const double total = layer.params * replicas;  // each leg
  const double rate = g.exchanges_per_step;
  cost.server_s = ServerSeconds(layer, replicas, g, p);
  cost.param_floats = per_worker;
  cost.param_bytes_out = cost.param_bytes_in = rate * per_worker * g.param_value_bytes;
  cost.param_floats_total = rate * 2.0 * total;
  cost.param_latency_s = rate * p.latency_seconds();
  cost.param_s = rate * 2.0 * LegSeconds(choice, per_worker, total, g, p) + 2.0 * cost.param_latency_s;
  return cost;
}

LayerCost EdgeCost(const LayerFacts& src, Choice cs, int src_rank, Dependency dep, Choice cd, int dst_rank,
                   const Grouping& g, const ClusterProfile& p) {
  LayerCost cost;
  if (dep == Dependency::kNone) return cost;
  const double x = g.records_per_group() * src.feature;
  const Move move = Relayout(Holds(cs), Needs(cd, dep), src_rank == dst_rank, x, g.group_size,
                             SplitShares(src.units, g.group_size));
  if (move.busiest == 0.0) return cost;
  // Forward: the feature; backward: its gradient, the same volume the other way.
  const int directions = src.wants_grad ? 2 : 1;
  cost.feature_bytes_in = move.busiest * kBytesPerFloat;
  if (src.wants_grad) cost.feature_bytes_out = cost.feature_bytes_in;
  cost.feature_floats_total = directions * move.group_total * g.groups();
  const double leg = FeatureLegSeconds(move, g, p) + move.steps * p.latency_seconds();
  cost.feature_s = directions * leg;
  cost.backward_s = (directions - 1) * leg;  // the feature's gradient, back
  return cost;
}

double StepSeconds(const std::vector<LayerCost>& costs, const Grouping& g) {
  // Without overlap every layer's parameters go in one message a direction:
  // one latency a leg, not one per layer.
  double serial = 0.0, forward = 0.0, latency = 0.0;
  for (const LayerCost& c : costs) {
    serial += c.compute_s + c.feature_s + c.param_s - 2.0 * c.param_latency_s + c.server_s;
    forward += c.compute_s + c.feature_s - c.backward_s;
    latency = std::max(latency, c.param_latency_s);
  }
  if (!g.overlap) return serial + 2.0 * latency;
  // done[i]: when backprop has finished layer i (the step begins with the forward pass).
  std::vector<double> done(costs.size());
  double t = forward;
  for (size_t i = costs.size(); i-- > 0;) done[i] = t += costs[i].backward_s;
  // The lanes of the layers whose parameters travel, as a worker cuts them
  // (its servers each hold an equal share of every layer: the same cuts on each).
  std::vector<size_t> travelling, floats;
  for (size_t i = 0; i < costs.size(); ++i) {
    if (costs[i].param_s <= 0.0) continue;
    travelling.push_back(i);
    floats.push_back(static_cast<size_t>(costs[i].param_floats));
  }
  std::vector<double> back(costs.size(), 0.0);  // when layer i's values are back
  double out = 0.0, in = 0.0, served = 0.0;     // when each direction, and the servers, are free
  for (const LaneRange& lane : GroupLanes(floats, static_cast<size_t>(g.lane_floats()))) {
    // One message a direction: the lane's bytes, and one latency.
    double leg = 0.0, latency = 0.0, work = 0.0;
    for (size_t k = lane.begin; k < lane.end; ++k) {
      const LayerCost& c = costs[travelling[k]];
      leg += c.param_s / 2.0 - c.param_latency_s;
      latency = std::max(latency, c.param_latency_s);
      work += c.server_s;
    }
    leg += latency;
    const double ready = done[travelling[lane.begin]];
    out = std::max({ready, out, g.bound_servers ? in : 0.0}) + leg;  // gradients out
    served = std::max(served, out) + work;                           // the servers' update, lane by lane
    in = std::max(in, served) + leg;                                 // values back
    for (size_t k = lane.begin; k < lane.end; ++k) back[travelling[k]] = in;
  }
  // The next step's forward pass, from the end of backprop.
  t = costs.empty() ? 0.0 : done[0];
  for (size_t i = 0; i < costs.size(); ++i)
    t = std::max(t, back[i]) + costs[i].compute_s + costs[i].feature_s - costs[i].backward_s;
  return t - forward;
}

CostGraph BuildCostGraph(const std::vector<LayerFacts>& layers, const std::vector<uint8_t>& allowed,
                         const std::vector<int>& ranks, const Grouping& g, const ClusterProfile& p) {
  CostGraph graph;
  for (size_t i = 0; i < layers.size(); ++i) {
    std::array<double, kChoices> node{};
    for (int c = 0; c < kChoices; ++c)
      node[c] = NodeCost(layers[i], static_cast<Choice>(c), g, p).node_seconds();
    graph.AddNode(node, allowed[i]);
    for (size_t k = 0; k < layers[i].srcs.size(); ++k) {
      CostGraph::Edge e;
      e.src = layers[i].srcs[k];
      e.dst = static_cast<int>(i);
      for (int cs = 0; cs < kChoices; ++cs)
        for (int cd = 0; cd < kChoices; ++cd)
          e.cost[cs][cd] = EdgeCost(layers[e.src], static_cast<Choice>(cs), ranks[e.src], layers[i].deps[k],
                                    static_cast<Choice>(cd), ranks[i], g, p)
                               .feature_s;
      graph.edges.push_back(e);
    }
  }
  return graph;
}

std::vector<LayerCost> CostBreakdown(const std::vector<LayerFacts>& layers,
                                     const std::vector<Choice>& choices, const std::vector<int>& ranks,
                                     const Grouping& g, const ClusterProfile& p) {
  std::vector<LayerCost> costs;
  for (size_t i = 0; i < layers.size(); ++i) {
    LayerCost c = NodeCost(layers[i], choices[i], g, p);
    for (size_t k = 0; k < layers[i].srcs.size(); ++k) {
      const int s = layers[i].srcs[k];
      c.Add(EdgeCost(layers[s], choices[s], ranks[s], layers[i].deps[k], choices[i], ranks[i], g, p));
    }
    costs.push_back(c);
  }
  return costs;
}

}  // namespace shoal
