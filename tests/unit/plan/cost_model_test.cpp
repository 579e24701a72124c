// Tests for lib/plan/cost_model and cluster_profile's network: workers that
// share a node share its NIC (and exchange features in memory), a switch's
// backplane and a rack's uplink bound a leg of traffic when they are the
// busiest link, and servers take their share in the direction workers do not.
#include "plan/cost_model.h"

#include <doctest/doctest.h>

#include <cmath>

#include "config/job.h"
#include "core/env_switch.h"
#include "graph/net.h"
#include "plan/cluster_profile.h"
#include "test_util.h"

namespace shoal {
namespace {

constexpr double kMiB = 1 << 20;

// A fully connected layer of 1 MiB of parameters (fp32) reading a 1024-float feature.
LayerFacts Layer() {
  LayerFacts l;
  l.name = "fc";
  l.type = "fully_connected";
  l.params = kMiB / 4;
  l.feature = 1024;
  l.units = 256;
  l.splittable = true;
  return l;
}

// A slow network (1 MiB/s, no latency) and compute that costs nothing.
ClusterProfile Slow() {
  ClusterProfile p;
  p.bandwidth_gbps = kMiB * 8 / 1e9;  // 1 MiB a second
  p.latency_us = 0.0;
  p.gflops_per_worker = 1e9;  // compute ~0
  return p;
}

Grouping Workers(int n, int m = 1) {
  Grouping g;
  g.workers = n;
  g.group_size = m;
  g.batch = 64 * n;
  return g;
}

// The facts dl-plan collects from the net of the job `yaml`.
std::vector<LayerFacts> FactsOf(const std::string& yaml) {
  JobConfig job;
  REQUIRE(ParseJob(yaml, "job.yaml", &job).ok());
  std::unique_ptr<Net> net;
  REQUIRE(Net::Build(job, &net, /*allocate_params=*/false).ok());
  return CollectLayerFacts(job, *net);
}

// One leg of parameter traffic (param_s is both legs).
double Leg(const LayerCost& c) { return c.param_s / 2.0; }

TEST_CASE("a batch norm synchronised over the workers is charged its rounds and its bytes") {
  const std::string yaml =
      "model:\n  layers:\n"
      "    - {name: data, type: data, shape: [16, 8, 8]}\n"
      "    - {name: bn, type: batch_norm, srclayers: data, sync: SYNC}\n"
      "    - {name: fc, type: fully_connected, srclayers: bn, num_output: 10}\n"
      "    - {name: loss, type: softmax_loss, srclayers: [fc, data]}\n"
      "train: {batch_size: 8}\n";
  auto with = [&](const std::string& sync) {
    std::string text = yaml;
    return FactsOf(text.replace(text.find("SYNC"), 4, sync))[1];
  };
  const LayerFacts synced = with("true"), plain = with("false");
  CHECK(synced.group_exchange.rounds == 3);
  CHECK(synced.group_exchange.floats == 2.0 * (4 * 16 + 3));  // doubles a channel and the counts, as floats
  CHECK(plain.group_exchange.rounds == 0);
  ClusterProfile p = Slow();
  p.latency_us = 100.0;
  p.workers_per_node = 1;  // every peer over the network
  const LayerCost cost = NodeCost(synced, Choice::kData, Workers(4), p);
  const double bytes = 3 * synced.group_exchange.floats * 4;  // to each of 3 peers
  CHECK(cost.feature_bytes_out == doctest::Approx(bytes));
  CHECK(cost.feature_s == doctest::Approx(bytes / kMiB + 3 * 100e-6));
  CHECK(cost.backward_s == doctest::Approx(cost.feature_s / 3));
  CHECK(NodeCost(plain, Choice::kData, Workers(4), p).feature_s == 0.0);
  CHECK(NodeCost(synced, Choice::kData, Workers(1), p).feature_s == 0.0);  // alone: nothing to sum
}

TEST_CASE("workers sharing a node share its NIC") {
  ClusterProfile p = Slow();
  const LayerFacts fc = Layer();
  CHECK(Leg(NodeCost(fc, Choice::kData, Workers(8), p)) == doctest::Approx(1.0));  // its MiB each way
  p.workers_per_node = 4;
  CHECK(Leg(NodeCost(fc, Choice::kData, Workers(8), p)) == doctest::Approx(4.0));
  // Model parallel in groups of 4: each holds a quarter, four of them on a node.
  CHECK(Leg(NodeCost(fc, Choice::kModel, Workers(8, 4), p)) == doctest::Approx(1.0));
  // Unpartitioned in groups of 4: one rank of the node's one group holds it.
  CHECK(Leg(NodeCost(fc, Choice::kNone, Workers(8, 4), p)) == doctest::Approx(1.0));
  // What a worker sends is its own, whoever it shares a NIC with.
  CHECK(NodeCost(fc, Choice::kData, Workers(8), p).param_bytes_out == doctest::Approx(kMiB));
}

TEST_CASE("servers, the backplane and rack uplinks bound a leg when they are the busiest link") {
  ClusterProfile p = Slow();
  const LayerFacts fc = Layer();
  Grouping g = Workers(8);
  g.servers = 2;  // 8 MiB over 2 servers' NICs
  CHECK(Leg(NodeCost(fc, Choice::kData, g, p)) == doctest::Approx(4.0));
  g.servers = 8;
  CHECK(Leg(NodeCost(fc, Choice::kData, g, p)) == doctest::Approx(1.0));
  p.backplane_gbps = p.bandwidth_gbps * 2;  // the switch moves 2 MiB/s in all
  CHECK(Leg(NodeCost(fc, Choice::kData, g, p)) == doctest::Approx(4.0));
  p.backplane_gbps = 0.0;
  // Two racks of 4 nodes: each rack's workers send half of their 4 MiB through its uplink.
  p.nodes_per_rack = 4;
  p.uplink_gbps = p.bandwidth_gbps;
  CHECK(p.Racks(8) == 2);
  CHECK(Leg(NodeCost(fc, Choice::kData, g, p)) == doctest::Approx(2.0));
  p.uplink_gbps = p.bandwidth_gbps * 4;
  CHECK(Leg(NodeCost(fc, Choice::kData, g, p)) == doctest::Approx(1.0));
}

TEST_CASE("servers with their workers (AllReduce) keep what a node's own servers own off the network") {
  ClusterProfile p = Slow();
  const LayerFacts fc = Layer();
  Grouping g = Workers(8);
  g.bound_servers = true;  // a reduce-scatter, then an all-gather: 7/8 of a worker's MiB each way
  CHECK(Leg(NodeCost(fc, Choice::kData, g, p)) == doctest::Approx(7.0 / 8));
  p.workers_per_node = 4;  // two nodes: half of what each node's four workers send stays on it
  CHECK(Leg(NodeCost(fc, Choice::kData, g, p)) == doctest::Approx(4 * 0.5));
  p.workers_per_node = 8;
  CHECK(Leg(NodeCost(fc, Choice::kData, g, p)) == 0.0);
}

TEST_CASE(
    "a group within one node exchanges its features in memory; across nodes, what leaves the node counts") {
  ClusterProfile p = Slow();
  LayerFacts src = Layer();
  src.wants_grad = false;  // one direction: the forward leg alone
  const Grouping g = Workers(8, 4);
  const double x = g.records_per_group() * src.feature * 4;  // bytes of the group's feature
  // One worker a node: an all-gather brings each rank the 3/4 it lacks.
  const double alone = EdgeCost(src, Choice::kModel, 0, Dependency::kFull, Choice::kModel, 0, g, p).feature_s;
  CHECK(alone == doctest::Approx(x * 3 / 4 / kMiB));
  p.workers_per_node = 4;
  CHECK(EdgeCost(src, Choice::kModel, 0, Dependency::kFull, Choice::kModel, 0, g, p).feature_s == 0.0);
  // Two workers a node: each rank's peers beyond its node are 2 of 3, both ranks share the NIC.
  p.workers_per_node = 2;
  CHECK(EdgeCost(src, Choice::kModel, 0, Dependency::kFull, Choice::kModel, 0, g, p).feature_s ==
        doctest::Approx(2 * alone * 2 / 3));
}

// A worker of 10 GFLOP/s on which Winograd's kernel runs twice as fast.
ClusterProfile WinogradTwiceAsFast() {
  ClusterProfile p = Slow();
  p.gflops_per_worker = 10;
  p.winograd_speedup = 2;
  return p;
}

// A convolution of 64 filters, 1 GFLOP a record.
LayerFacts Convolution() {
  LayerFacts conv = Layer();
  conv.type = "convolution";
  conv.flops = 1e9;
  conv.units = 64;
  return conv;
}

TEST_CASE(
    "a convolution Winograd takes runs winograd_speedup times faster, a part with too few filters does not") {
  ClusterProfile p = WinogradTwiceAsFast();
  LayerFacts conv = Convolution();
  const Grouping g = Workers(4);
  CHECK(NodeCost(conv, Choice::kData, g, p).compute_s ==
        doctest::Approx(6.4));  // not taken: winograd_units 0
  conv.winograd_units = 32;
  CHECK(NodeCost(conv, Choice::kData, g, p).compute_s == doctest::Approx(3.2));
  // Split over 2 workers each keeps 32 filters, over 4 only 16: direct kernels then.
  CHECK(NodeCost(conv, Choice::kModel, Workers(2, 2), p).compute_s == doctest::Approx(0.5 * 128 * 0.1 / 2));
  CHECK(NodeCost(conv, Choice::kModel, Workers(4, 4), p).compute_s == doctest::Approx(0.25 * 256 * 0.1));
  // 40 filters over 2: parts of 20, direct. 63 over 2: the part of 31 filters, direct, is the slower one.
  conv.units = 40;
  CHECK(NodeCost(conv, Choice::kModel, Workers(2, 2), p).compute_s == doctest::Approx(0.5 * 128 * 0.1));
  conv.units = 63;
  CHECK(NodeCost(conv, Choice::kModel, Workers(2, 2), p).compute_s == doctest::Approx(31.0 / 63 * 128 * 0.1));
  p.winograd_speedup = 0.5;  // slower than direct: the part of 32 filters is the busiest
  CHECK(NodeCost(conv, Choice::kModel, Workers(2, 2), p).compute_s == doctest::Approx(32.0 / 63 * 128 * 0.2));

  // Built from the layers: Winograd takes stride-1 3x3 layers of 32 channels in and 32 filters or more.
  const auto facts = FactsOf(
      "name: cnn\nmodel:\n  layers:\n"
      "    - {name: data, type: data, shape: [3, 32, 32]}\n"
      "    - {name: c1, type: convolution, srclayers: data, num_output: 32, kernel: 5, pad: 2}\n"
      "    - {name: c2, type: convolution, srclayers: c1, num_output: 96, kernel: 3, pad: 1}\n"
      "    - {name: c3, type: convolution, srclayers: c2, num_output: 64, kernel: 3, stride: 2}\n"
      "    - {name: fc, type: fully_connected, srclayers: c3, num_output: 10}\n"
      "    - {name: loss, type: softmax_loss, srclayers: [fc, data]}\n"
      "train: {batch_size: 4}\n");
  REQUIRE(facts.size() == 6);
  CHECK(facts[1].winograd_units == 0);  // 3 channels in
  CHECK(facts[2].winograd_units == (EnvSwitchOn("SHOAL_WINOGRAD") ? 32 : 0));
  CHECK(facts[3].winograd_units == 0);  // stride 2
  CHECK(facts[4].winograd_units == 0);
  // A record gives a convolution's products a row an output pixel; their sums
  // are channels × kernel² long, or channels on Winograd's kernel.
  CHECK(facts[1].rows_per_record == 32 * 32);
  CHECK(facts[3].rows_per_record == 15 * 15);
  CHECK(facts[2].inner == 32 * 9);
  CHECK(facts[2].winograd_inner == 32);
  CHECK(facts[1].inner == 3 * 25);
  CHECK(facts[4].inner == 0);  // a fully connected layer: not priced by it
}

TEST_CASE("a convolution's short sums run at K/(K + half_rate_inner) of its rate, on either kernel") {
  ClusterProfile p = WinogradTwiceAsFast();
  LayerFacts conv = Convolution();
  conv.inner = 288;  // 32 channels, 3 × 3
  conv.winograd_inner = 32;
  const Grouping g = Workers(4);  // 64 records a worker: 6.4 s at 10 GFLOP/s
  CHECK(NodeCost(conv, Choice::kData, g, p).compute_s == doctest::Approx(6.4));  // no effect set
  p.half_rate_inner = 96;
  CHECK(NodeCost(conv, Choice::kData, g, p).compute_s == doctest::Approx(6.4 * (288 + 96) / 288.0));
  conv.winograd_units = 32;  // Winograd's products sum over the 32 channels alone
  CHECK(NodeCost(conv, Choice::kData, g, p).compute_s == doctest::Approx(3.2 * (32 + 96) / 32.0));
  LayerFacts fc = Layer();  // no inner length: the rate as it is
  fc.flops = 1e9;
  CHECK(NodeCost(fc, Choice::kData, g, p).compute_s == doctest::Approx(6.4));
  CHECK(p.FlopsPerSecond("convolution", 1e12, 96) == doctest::Approx(5e9));
  CHECK(p.FlopsPerSecond("convolution", 1e12) == doctest::Approx(10e9));
}

TEST_CASE("compute runs at the layer type's rate, slower at small batches, and BSP waits for the slowest") {
  ClusterProfile p = Slow();
  p.gflops_per_worker = 10;
  LayerFacts fc = Layer();
  fc.flops = 1e9;                 // per record
  const Grouping g = Workers(4);  // 64 records a worker
  CHECK(NodeCost(fc, Choice::kData, g, p).compute_s == doctest::Approx(6.4));
  p.layer_gflops["fully_connected"] = 20;
  p.layer_gflops["convolution"] = 5;
  CHECK(NodeCost(fc, Choice::kData, g, p).compute_s == doctest::Approx(3.2));
  // Half the rate at 64 records a worker; model parallel, each computes its share of the group's 256.
  p.half_rate_records = 64;
  CHECK(NodeCost(fc, Choice::kData, g, p).compute_s == doctest::Approx(6.4));
  const Grouping group = Workers(4, 4);
  CHECK(NodeCost(fc, Choice::kModel, group, p).compute_s == doctest::Approx(3.2 * (256 + 64) / 256.0));
  // 4 workers in step, each step's compute spread 10%: the slowest of 4 sets the pace.
  p.half_rate_records = 0;
  p.compute_cv = 0.1;
  const double slowest = 1 + 0.1 * std::sqrt(2 * std::log(4.0));
  CHECK(StragglerFactor(g, p) == doctest::Approx(slowest));
  CHECK(NodeCost(fc, Choice::kData, g, p).compute_s == doctest::Approx(3.2 * slowest));
  Grouping ssp = g, async = g;
  ssp.staleness = 3;  // four steps' draws averaged
  CHECK(StragglerFactor(ssp, p) == doctest::Approx(1 + 0.1 * std::sqrt(2 * std::log(4.0)) / 2));
  async.staleness = -1;  // groups of one wait for nobody
  CHECK(StragglerFactor(async, p) == 1.0);
  async.group_size = 2;  // but a group's workers wait for each other every layer
  CHECK(StragglerFactor(async, p) == doctest::Approx(1 + 0.1 * std::sqrt(2 * std::log(2.0))));
  // A spread measured on 0.2 s steps, for a step of 3.2 s of compute: a quarter of it.
  p.compute_cv_seconds = 0.2;
  Grouping timed = g;
  timed.step_compute_s = StepComputeSeconds({fc}, g, p);
  CHECK(timed.step_compute_s == doctest::Approx(3.2));
  CHECK(StragglerFactor(timed, p) == doctest::Approx(1 + 0.025 * std::sqrt(2 * std::log(4.0))));
  CHECK(StragglerFactor(g, p) == doctest::Approx(slowest));  // the step's length unknown: as measured
}

TEST_CASE("between the legs the servers update and copy each replica's reply at their memory rate") {
  ClusterProfile p = Slow();
  const LayerFacts fc = Layer();  // 2^18 values
  Grouping g = Workers(4);
  g.servers = 2;
  CHECK(NodeCost(fc, Choice::kData, g, p).server_s == 0.0);  // no rate: free
  p.server_memory_gb_per_s = 1;
  const double per_server = kMiB / 4 / 2 / 1e9;  // values a server holds, over its rate
  // BSP, momentum: the last gradient (4) added to the sum (4), the value and
  // its velocity read and written (16); then 4 replies (4 read, 4 written).
  const LayerCost momentum = NodeCost(fc, Choice::kData, g, p);
  CHECK(momentum.server_s == doctest::Approx(per_server * (24 + 4 * 8)));
  CHECK(momentum.node_seconds() == doctest::Approx(momentum.param_s + momentum.server_s));
  Grouping sgd = g;
  sgd.server_work.updater_states = 0;
  CHECK(NodeCost(fc, Choice::kData, sgd, p).server_s == doctest::Approx(per_server * (16 + 4 * 8)));
  // Two server groups: each updates a whole copy, for half the replicas.
  Grouping copies = g;
  copies.server_work.server_groups = 2;
  CHECK(NodeCost(fc, Choice::kData, copies, p).server_s == doctest::Approx(per_server * (2 * 24 + 4 * 8)));
  // Async: each replica's update on its own (no sum), then its reply.
  Grouping async = g;
  async.server_work.updates_alone = true;
  CHECK(NodeCost(fc, Choice::kData, async, p).server_s == doctest::Approx(per_server * 4 * (20 + 8)));
  // Model parallel: one replica, one reply.
  Grouping group = Workers(4, 4);
  group.servers = 2;
  CHECK(NodeCost(fc, Choice::kModel, group, p).server_s == doctest::Approx(per_server * (24 + 8)));
}

TEST_CASE(
    "a recurrence's chained products run at the batch's rate, its other products over every step's rows") {
  ClusterProfile p = Slow();
  p.gflops_per_worker = 10;
  p.half_rate_records = 64;
  LayerFacts gru = Layer();
  gru.type = "gru";
  gru.flops = 3e9;  // per record
  gru.chained_flops = 1e9;
  gru.rows_per_record = 50;
  const Grouping g = Workers(4);  // 64 records a worker
  // 2e9 over 64 × 50 rows, 1e9 over 64 rows at half the rate.
  const double rest = 2e9 * 64 / 10e9 * (64 * 50 + 64) / (64 * 50.0), chained = 1e9 * 64 / 5e9;
  CHECK(NodeCost(gru, Choice::kData, g, p).compute_s == doctest::Approx(rest + chained));
  // The same step's records over 16 workers: the chain slows more than the rest.
  Grouping sixteen = Workers(16);
  sixteen.batch = g.batch;  // 16 records a worker
  const double chained_at_16 = 1e9 * 16 / 10e9 * (16 + 64) / 16.0;
  CHECK(NodeCost(gru, Choice::kData, sixteen, p).compute_s ==
        doctest::Approx(2e9 * 16 / 10e9 * (16 * 50 + 64) / (16 * 50.0) + chained_at_16));
  // Built from the layer: its chain is the hidden products, 12·H² a step of the forward and backward counts.
  const auto facts = FactsOf(
      "name: rnn\nmodel:\n  layers:\n"
      "    - {name: data, type: data, shape: [11]}\n"
      "    - {name: embed, type: embedding, srclayers: data, vocab: 20, num_output: 8, steps: 10}\n"
      "    - {name: gru, type: gru, srclayers: embed, num_output: 16}\n"
      "    - {name: logits, type: fully_connected, srclayers: gru, num_output: 20, axis: 1}\n"
      "    - {name: loss, type: softmax_loss, srclayers: [logits, data]}\n"
      "train: {batch_size: 4}\n");
  REQUIRE(facts.size() == 5);
  CHECK(facts[2].rows_per_record == 10);
  CHECK(facts[2].chained_flops == doctest::Approx(10 * 12.0 * 16 * 16));
  CHECK(facts[2].flops == doctest::Approx(3 * 10 * (6.0 * 16 * (8 + 16) + 12 * 16)));
  CHECK(facts[3].rows_per_record == 10);  // a fully connected layer over each step
  CHECK(facts[3].chained_flops == 0.0);
  CHECK(facts[1].rows_per_record == 1);
}

TEST_CASE("a GPU worker's parameters cross its host link") {
  ClusterProfile p = Slow();
  const LayerFacts fc = Layer();
  p.host_device_gbps = p.bandwidth_gbps / 2;  // PCIe slower than the NIC
  CHECK(Leg(NodeCost(fc, Choice::kData, Workers(8), p)) == doctest::Approx(2.0));
  p.host_device_gbps = p.bandwidth_gbps * 16;
  CHECK(Leg(NodeCost(fc, Choice::kData, Workers(8), p)) == doctest::Approx(1.0));
  // Without overlap each leg waits for its copy.
  Grouping serial = Workers(8);
  serial.overlap = false;
  CHECK(Leg(NodeCost(fc, Choice::kData, serial, p)) == doctest::Approx(1.0 + 1.0 / 16));
}

// A layer's cost as StepSeconds reads it.
LayerCost Timed(double compute, double backward, double params_s, double floats) {
  LayerCost c;
  c.compute_s = compute;
  c.backward_s = backward;
  c.param_s = params_s;
  c.param_floats = floats;
  return c;
}

TEST_CASE(
    "the step as run: lanes leave as backprop finishes them, and the next forward waits for its values") {
  // Bottom layer: 4 s of compute (2 of it backward), 1 s a leg; top layer:
  // 2 s (1 backward), 3 s a leg. Forward 3 s; backprop finishes the top at 4
  // and the bottom at 6.
  const std::vector<LayerCost> costs = {Timed(4, 2, 2, 10), Timed(2, 1, 6, 10)};
  Grouping g;
  g.servers = 1;
  g.bucket_floats = 0;  // a lane each
  // Top lane out 4-7, back 7-10; bottom out 7-8, back 10-11. The next forward
  // starts the bottom at 11 and ends at 14: a step of 14 - 3 = 11 s.
  CHECK(StepSeconds(costs, g) == doctest::Approx(11));
  // Under AllReduce both legs load both directions: the bottom goes out at
  // 10-11 and is back at 12.
  Grouping bound = g;
  bound.bound_servers = true;
  CHECK(StepSeconds(costs, bound) == doctest::Approx(12));
  // One lane for both leaves when backprop ends: nothing hides.
  Grouping one_lane = g;
  one_lane.bucket_floats = 20;
  CHECK(StepSeconds(costs, one_lane) == doctest::Approx(14));
  // Without overlap: compute, then the exchange.
  Grouping off = g;
  off.overlap = false;
  CHECK(StepSeconds(costs, off) == doctest::Approx(4 + 2 + 2 + 6));
  // Features are on the path both ways: a feature's gradient delays backprop.
  std::vector<LayerCost> fed = costs;
  fed[1].feature_s = 2;
  fed[1].backward_s += 1;  // half of it back
  CHECK(StepSeconds(fed, g) == doctest::Approx(13));
  // A lane is one message a direction: with 0.5 s of latency a leg on each
  // layer, one lane of both pays it once (a leg of 1 + 3 + 0.5 s, not 5): out
  // 6-10.5, back 10.5-15, then the 3 s forward. A lane each pays it on each:
  // top out 4-7.5, back 7.5-11; bottom out 7.5-9, back 11-12.5.
  std::vector<LayerCost> late = costs;
  for (LayerCost& c : late) c.param_s += 1.0, c.param_latency_s = 0.5;
  CHECK(StepSeconds(late, one_lane) == doctest::Approx(15 + 3 - 3));
  CHECK(StepSeconds(late, g) == doctest::Approx(12.5 + 2 + 1 - 3));
  // Without overlap the exchange is one message a direction too.
  CHECK(StepSeconds(late, off) == doctest::Approx(4 + 2 + 2 * (1 + 3 + 0.5)));
  // The servers' work between the legs, lane by lane: 2 s on the top lane,
  // 1 s on the bottom. Top out 4-7, served 7-9, back 9-12; bottom out 7-8,
  // served 9-10 (after the top's), back 12-13; the forward ends at 16.
  std::vector<LayerCost> served = costs;
  served[0].server_s = 1, served[1].server_s = 2;
  CHECK(StepSeconds(served, g) == doctest::Approx(16 - 3));
  CHECK(StepSeconds(served, off) == doctest::Approx(4 + 2 + 2 + 6 + 3));
}

TEST_CASE("a cluster profile's network fields are read and checked") {
  ClusterProfile p;
  const std::string base = "bandwidth_gbps: 10\nlatency_us: 5\ngflops_per_worker: 50\n";
  REQUIRE(ParseClusterProfile(base + "workers_per_node: 4\nbackplane_gbps: 320\nnodes_per_rack: 16\n"
                                     "uplink_gbps: 40\n",
                              "c.yaml", &p)
              .ok());
  CHECK(p.workers_per_node == 4);
  CHECK(p.backplane_gbps == 320);
  CHECK(p.nodes_per_rack == 16);
  CHECK(p.uplink_gbps == 40);
  CHECK(p.WorkerNodes(9) == 3);
  CHECK(p.Racks(128) == 2);
  ClusterProfile again;
  REQUIRE(ParseClusterProfile(ClusterProfileToYaml(p, "written"), "again.yaml", &again).ok());
  CHECK(again.workers_per_node == 4);
  CHECK(again.uplink_gbps == 40);
  REQUIRE(ParseClusterProfile(
              base + "layer_gflops: {convolution: 30, fully_connected: 45}\nhalf_rate_records: 8\n"
                     "compute_cv: 0.05\ncompute_cv_seconds: 0.02\nserver_memory_gb_per_s: 6\n"
                     "host_device_gbps: 100\nwinograd_speedup: 1.8\nhalf_rate_inner: 120\n",
              "c.yaml", &p)
              .ok());
  CHECK(p.layer_gflops.at("convolution") == 30);
  CHECK(p.winograd_speedup == doctest::Approx(1.8));
  CHECK(p.FlopsPerSecond("convolution", 8) == doctest::Approx(15e9));
  CHECK(p.FlopsPerSecond("relu", 1e12) == doctest::Approx(50e9));
  REQUIRE(ParseClusterProfile(ClusterProfileToYaml(p, ""), "again.yaml", &again).ok());
  CHECK(again.layer_gflops == p.layer_gflops);
  CHECK(again.compute_cv == doctest::Approx(0.05));
  CHECK(again.compute_cv_seconds == doctest::Approx(0.02));
  CHECK(again.server_memory_gb_per_s == 6);
  CHECK(again.host_device_gbps == 100);
  CHECK(again.winograd_speedup == doctest::Approx(1.8));
  CHECK(again.half_rate_inner == 120);
  CHECK(Contains(ParseClusterProfile(base + "half_rate_inner: -1\n", "c.yaml", &p).message(),
                 "half_rate_inner"));
  CHECK(Contains(ParseClusterProfile(base + "winograd_speedup: 0\n", "c.yaml", &p).message(),
                 "winograd_speedup"));
  CHECK(Contains(ParseClusterProfile(base + "layer_gflops: {convlution: 30}\n", "c.yaml", &p).message(),
                 "convlution"));
  CHECK(Contains(ParseClusterProfile(base + "layer_gflops: {convolution: 0}\n", "c.yaml", &p).message(),
                 "must be positive"));
  Status s = ParseClusterProfile(base + "nodes_per_rack: 16\n", "c.yaml", &p);
  CHECK(Contains(s.message(), "c.yaml"));
  CHECK(Contains(s.message(), "needs 'uplink_gbps'"));
  s = ParseClusterProfile(base + "workers_per_node: 0\n", "c.yaml", &p);
  CHECK(Contains(s.message(), "workers_per_node"));
  s = ParseClusterProfile(base + "backplane_gbps: -1\n", "c.yaml", &p);
  CHECK(Contains(s.message(), "backplane_gbps"));
  s = ParseClusterProfile(base + "server_memory_gb_per_s: -3\n", "c.yaml", &p);
  CHECK(Contains(s.message(), "server_memory_gb_per_s"));
}

}  // namespace
}  // namespace shoal
