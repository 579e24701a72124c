// The planner's cost model (SINGA tech report §4, journal paper §5.4): for
// one training step, what each layer costs under each partitioning, in
// seconds on the busiest worker and in bytes, from the layer's own cost facts
// and a cluster profile.
//
// N workers form G groups of M; each group takes B/G records of the step's
// mini-batch B. Data parallelism on a layer splits the group's records over
// its M workers, each holding a replica of the parameters (N replicas, traffic
// 2·P each); model parallelism splits the features, one replica per group
// (2·P/M per worker: the servers hold every parameter, even a single replica's);
// none puts the whole layer on one worker of the group. Feature traffic is
// the relayout of each source's feature into what the consumer needs.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "layers/layer.h"
#include "plan/cluster_profile.h"
#include "plan/partition_search.h"

namespace shoal {

class Net;
struct JobConfig;

// A layer as the planner sees it.
struct LayerFacts {
  std::string name, type;
  double params = 0.0;          // P_l, floats
  bool frozen = false;          // lr_mult 0: its parameters never travel (lib/train/param_table.h)
  double feature = 0.0;         // D_l, floats per record
  double flops = 0.0;           // forward + backward, per record
  double backward_flops = 0.0;  // of flops, the backward pass's
  double rows_per_record = 1;   // rows a record gives the layer's products (Layer::RowsPerRecord)
  double chained_flops = 0.0;   // of flops, a recurrence's: one row a record, step after step
  // The products' inner length on the direct kernel and on Winograd's (Layer::ProductInner); 0: none.
  double inner = 0.0, winograd_inner = 0.0;
  // A part with this many units or more runs on Winograd's kernel; 0: the whole layer does not
  // (a smaller part may, where more of its tiles fit a group, and is priced as direct all the same).
  double winograd_units = 0.0;
  bool wants_grad = true;   // gradients flow back into this layer's feature
  bool is_input = false;    // read from the shards by records: data parallel only
  bool rows_only = false;   // data parallel only: the input, and the loss (it reads the records' labels)
  bool splittable = false;  // may be model parallel: splits its outputs, or follows one source elementwise
  double units = 0.0;       // what model parallelism deals out (outputs, channels); 0: divides evenly
  Layer::GroupExchange group_exchange;  // data parallel in a group: its sums over the group (sync batch norm)
  std::vector<int> srcs;                // indices of source layers (earlier in the list)
  std::vector<Dependency> deps;         // per source
};

// Facts of every layer of a built net, in its topological order.
std::vector<LayerFacts> CollectLayerFacts(const JobConfig& job, const Net& net);

// How the servers treat the values of a step (from the job's updater and
// consistency model), for their work between a lane's legs.
struct ServerWork {
  // Arrays the updater keeps beside each value (sgd none, adam two, the
  // others one; EASGD's servers run no updater).
  int updater_states = 1;
  // Each replica's update applied on its own as it comes (async, SSP,
  // EASGD), not their sum once per step (BSP).
  bool updates_alone = false;
  int server_groups = 1;  // each holds a whole copy of the values (cluster.nserver_groups)
};

struct Grouping {
  int workers = 1;                  // N
  int group_size = 1;               // M
  int batch = 1;                    // B: records per step over all workers
  int servers = 0;                  // S; 0: enough that server links are never the bottleneck
  bool bound_servers = false;       // a server with every worker (server_worker_separate: false)
  double param_value_bytes = 4.0;   // a gradient or parameter value on the wire (cluster.wire)
  bool overlap = true;              // train.overlap: parameter traffic hides behind compute (else follows it)
  double exchanges_per_step = 1.0;  // parameter exchanges per step (EASGD: one every easgd_tau steps)
  // How a worker cuts its lanes (lib/plan/lanes.h): train.overlap_bucket_floats
  // on each server of its group's, so lane_floats() over all of them.
  double bucket_floats = 1 << 18;
  // How far the workers wait for each other: -1, within groups only (async,
  // EASGD); 0, all every step (BSP); s, all within s steps (SSP).
  int staleness = 0;
  ServerWork server_work;
  // A worker's compute for one step (StepComputeSeconds), the length the
  // profile's compute_cv is scaled to; 0: compute_cv as it is.
  double step_compute_s = 0.0;
  int groups() const { return workers / group_size; }
  double lane_floats() const { return bucket_floats * std::max(1, servers / server_work.server_groups); }
  double records_per_group() const { return static_cast<double>(batch) / groups(); }
};

// The step's compute, as a multiple of a worker's mean, when the workers
// wait for the slowest: the largest of n draws is ~ mean + std·sqrt(2 ln n)
// (profile's compute_cv); SSP's slack averages s + 1 steps' draws.
double StragglerFactor(const Grouping& g, const ClusterProfile& p);

// A worker's compute for one step with every layer data parallel, no straggler.
double StepComputeSeconds(const std::vector<LayerFacts>& layers, const Grouping& g, const ClusterProfile& p);

// One layer's share of a step. Bytes are per busiest worker per step;
// floats_total are over the whole cluster, both directions (SINGA's C).
struct LayerCost {
  double compute_s = 0.0, param_s = 0.0, feature_s = 0.0;
  double backward_s = 0.0;       // of compute_s + feature_s, the backward pass's
  double param_floats = 0.0;     // values one worker exchanges per exchange
  double param_latency_s = 0.0;  // of param_s, each leg's message latency (a lane's layers share one)
  double server_s =
      0.0;  // the servers' work on its values between the legs (profile's server_memory_gb_per_s)
  double param_bytes_out = 0.0, param_bytes_in = 0.0;      // gradients sent, values received
  double feature_bytes_in = 0.0, feature_bytes_out = 0.0;  // sources fetched, their gradients sent
  double param_floats_total = 0.0, feature_floats_total = 0.0;
  bool overlapped = true;  // parameter traffic overlaps with compute (train.overlap), or follows it
  // Feature traffic is always on the critical path.
  double node_seconds() const {
    const double exchange = param_s + server_s;
    if (!overlapped) return compute_s + exchange;
    return compute_s > exchange ? compute_s : exchange;
  }
  double seconds() const { return node_seconds() + feature_s; }
  void Add(const LayerCost& other);
};

// Compute and parameter traffic of `layer` under `choice`.
LayerCost NodeCost(const LayerFacts& layer, Choice choice, const Grouping& g, const ClusterProfile& p);

// Feature traffic on the edge from `src` (choice `cs`, held at rank `src_rank`
// when unpartitioned) into a layer with choice `cd` that depends on it as `dep`.
LayerCost EdgeCost(const LayerFacts& src, Choice cs, int src_rank, Dependency dep, Choice cd, int dst_rank,
                   const Grouping& g, const ClusterProfile& p);

// A step's seconds on the busiest worker, as the workers run it, from the
// layers' costs (CostBreakdown's). Without train.overlap: every layer's
// compute and features, then the parameter exchange. With it, backprop hands
// the parameters to the network lane by lane (lib/plan/lanes.h), top down, as
// it finishes each lane's lowest layer, and the next forward pass waits at
// each layer for its lane's values. A lane's gradients go out while an earlier
// lane's values come back where the two legs use different directions of the
// NICs (servers of their own); under AllReduce both legs use both, and lanes
// take the link in turn. So a lane's traffic hides behind the backprop of the
// layers below it, and the bottom lane's never does.
double StepSeconds(const std::vector<LayerCost>& costs, const Grouping& g);

// The pairwise cost graph the search minimises (node and edge costs in seconds).
// With overlap, a node's cost is the longer of its compute and its parameter
// traffic: the search's stand-in for StepSeconds, which is not a sum over layers.
CostGraph BuildCostGraph(const std::vector<LayerFacts>& layers, const std::vector<uint8_t>& allowed,
                         const std::vector<int>& ranks, const Grouping& g, const ClusterProfile& p);

// Per layer: its node cost plus the edges into it.
std::vector<LayerCost> CostBreakdown(const std::vector<LayerFacts>& layers,
                                     const std::vector<Choice>& choices, const std::vector<int>& ranks,
                                     const Grouping& g, const ClusterProfile& p);

}  // namespace shoal
