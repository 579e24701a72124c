// Tests for lib/net/partitioned_net: a small MLP planned over a group of 2 —
// all data, and hybrid (layers split by features, one on a single rank) —
// built on both ranks over real GroupChannels (inproc://, two threads), gives
// the loss and every parameter gradient the whole net gives on the group's
// records; and what it refuses, describes and counts.
#include "net/partitioned_net.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "comm/group_channel.h"
#include "config/job.h"
#include "graph/net.h"
#include "plan/partition.h"
#include "plan/plan.h"
#include "test_util.h"

namespace shoal {
namespace {

constexpr int kBatch = 3;  // records per rank
constexpr int kM = 2;
constexpr int kTimeoutMs = 2000;

// data 6 floats → fc1 5 → relu1 → fc2 4 → fc3 3 → loss.
const char* const kMlp =
    "model:\n"
    "  layers:\n"
    "    - {name: data, type: data, shape: [1, 2, 3]}\n"
    "    - {name: fc1, type: fully_connected, srclayers: data, num_output: 5}\n"
    "    - {name: relu1, type: relu, srclayers: fc1}\n"
    "    - {name: fc2, type: fully_connected, srclayers: relu1, num_output: 4}\n"
    "    - {name: fc3, type: fully_connected, srclayers: fc2, num_output: 3}\n"
    "    - {name: loss, type: softmax_loss, srclayers: [fc3, data]}\n"
    "train: {batch_size: 3, steps: 1}\n"
    "cluster: {nworkers_per_group: 2, consistency: bsp}\n";

// Hybrid: fc1 and relu1 split by features (5 units: 2 | 3), fc2 whole on
// rank 1, fc3 split by features (3 units: 1 | 2), data and loss by records.
const std::vector<int> kHybridDims = {0, 1, 1, -1, 1, 0};
const std::vector<int> kHybridLocations = {0, 0, 0, 1, 0, 0};

std::vector<std::string> WorkerEndpoints() {
  static std::atomic<int> next{0};
  const std::string base = "inproc://partitioned-net-test-" + std::to_string(next++);
  return {base + "-0", base + "-1"};
}

// Batch norms: bn1 feeds relu1 alone, which its passes compute; bn2 feeds
// relu2 and sum, so each runs its own. sum feeds relu3 alone, which its
// passes compute.
const char* const kNormed =
    "model:\n"
    "  layers:\n"
    "    - {name: data, type: data, shape: [1, 2, 3]}\n"
    "    - {name: fc1, type: fully_connected, srclayers: data, num_output: 5}\n"
    "    - {name: bn1, type: batch_norm, srclayers: fc1}\n"
    "    - {name: relu1, type: relu, srclayers: bn1}\n"
    "    - {name: fc2, type: fully_connected, srclayers: relu1, num_output: 4}\n"
    "    - {name: bn2, type: batch_norm, srclayers: fc2}\n"
    "    - {name: relu2, type: relu, srclayers: bn2}\n"
    "    - {name: sum, type: add, srclayers: [relu2, bn2]}\n"
    "    - {name: relu3, type: relu, srclayers: sum}\n"
    "    - {name: fc3, type: fully_connected, srclayers: relu3, num_output: 3}\n"
    "    - {name: loss, type: softmax_loss, srclayers: [fc3, data]}\n"
    "train: {batch_size: 3, steps: 1}\n";

// relu1 and relu2 are fused into the max pooling after them: windows that
// overlap (pool1) and that do not (pool2). relu3 (after a pooling, and into
// no pooling), relu4 (two consumers) and relu6 (into an average) are not.
const char* const kPooled =
    "model:\n"
    "  layers:\n"
    "    - {name: data, type: data, shape: [2, 7, 7]}\n"
    "    - {name: conv1, type: convolution, srclayers: data, num_output: 3, kernel: 3, pad: 1}\n"
    "    - {name: relu1, type: relu, srclayers: conv1}\n"
    "    - {name: pool1, type: pooling, srclayers: relu1, kernel: 3, stride: 2, ceil_mode: true}\n"
    "    - {name: conv2, type: convolution, srclayers: pool1, num_output: 4, kernel: 2}\n"
    "    - {name: relu2, type: relu, srclayers: conv2}\n"
    "    - {name: pool2, type: pooling, srclayers: relu2, kernel: 2}\n"
    "    - {name: relu3, type: relu, srclayers: pool2}\n"
    "    - {name: conv3, type: convolution, srclayers: data, num_output: 2, kernel: 3}\n"
    "    - {name: relu4, type: relu, srclayers: conv3}\n"
    "    - {name: pool4, type: pooling, srclayers: relu4, kernel: 5}\n"
    "    - {name: pool5, type: pooling, srclayers: relu4, kernel: 5, pool: avg}\n"
    "    - {name: conv6, type: convolution, srclayers: data, num_output: 2, kernel: 3}\n"
    "    - {name: relu6, type: relu, srclayers: conv6}\n"
    "    - {name: pool6, type: pooling, srclayers: relu6, kernel: 5, pool: avg}\n"
    "    - {name: cat, type: concat, srclayers: [relu3, pool4, pool5, pool6]}\n"
    "    - {name: fc, type: fully_connected, srclayers: cat, num_output: 3}\n"
    "    - {name: loss, type: softmax_loss, srclayers: [fc, data]}\n"
    "train: {batch_size: 3, steps: 1}\n";

Plan MakeGroupPlan(const std::vector<int>& dims, const std::vector<int>& locations) {
  JobConfig job;
  Status s = ParseJob(kMlp, "mlp.yaml", &job);
  INFO(s.ToString());
  REQUIRE(s.ok());
  Partition partition;
  partition.group_size = kM;
  partition.dims = dims;
  partition.locations = locations;
  PlanOptions options;
  options.endpoints = {"inproc://partitioned-net-test-server"};  // never dialled
  options.worker_endpoints = WorkerEndpoints();
  Plan plan;
  s = MakePlan(job, options, partition, &plan);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return plan;
}

// Parameter k's value i: fixed, distinct, of either sign.
float ParamValue(size_t k, size_t i) { return 0.4f * std::sin(1.3f * i + 0.7f * k + 0.2f); }
// Record r's float f of the group's records, and its label.
float Pixel(size_t r, size_t f) { return 0.5f + 0.45f * std::cos(0.9f * r + 1.7f * f); }
int32_t Label(size_t r) { return static_cast<int32_t>((r * 2 + 1) % 3); }

// The whole net on the group's 2·kBatch records.
struct Whole {
  std::unique_ptr<Net> net;
  double loss = 0.0;
  std::map<std::string, std::vector<float>> values, grads;  // by param name

  explicit Whole(const Plan& plan) {
    Status s = Net::Build(plan.job, &net);
    INFO(s.ToString());
    REQUIRE(s.ok());
    net->Allocate(kM * kBatch);
    const std::vector<Param*> params = net->params();
    for (size_t k = 0; k < params.size(); ++k) {
      std::vector<float>& v = values[params[k]->name];
      for (size_t i = 0; i < params[k]->value.size(); ++i) v.push_back(ParamValue(k, i));
      std::copy(v.begin(), v.end(), params[k]->value.data());
    }
    Tensor& data = net->data_layer().data();
    const size_t floats = data.size() / (kM * kBatch);
    for (size_t r = 0; r < static_cast<size_t>(kM * kBatch); ++r) {
      for (size_t f = 0; f < floats; ++f) data[r * floats + f] = Pixel(r, f);
      net->data_layer().labels()[r] = Label(r);
    }
    net->Forward(Phase::kTrain);
    loss = net->loss_layer().loss();
    net->Backward();
    for (Param* p : params) grads[p->name].assign(p->grad.data(), p->grad.data() + p->grad.size());
  }
};

struct RankRun {
  Status build, forward, backward;
  std::unique_ptr<PartitionedNet> net;
  double loss = 0.0;
};

// Both ranks' parts of `plan`, each on a channel of its own.
struct GroupRun {
  const Plan& plan;
  GroupChannel channels[kM];
  RankRun ranks[kM];

  explicit GroupRun(const Plan& plan, const Whole& whole) : plan(plan) {
    for (int r = 0; r < kM; ++r) {
      Status s = channels[r].Open(GroupPeersOf(plan, r, kTimeoutMs));
      INFO(s.ToString());
      REQUIRE(s.ok());
      s = PartitionedNet::Build(plan, r, &channels[r], &ranks[r].net);
      INFO("rank " << r << ": " << s.ToString());
      REQUIRE(s.ok());
      PartitionedNet& net = *ranks[r].net;
      // Each rank's parameters: the rows of the whole net's it holds.
      for (Param* p : net.params()) {
        const Range held = HeldFloats(plan, *plan.FindParam(p->name), r);
        INFO("rank " << r << ", " << p->name);
        REQUIRE(p->value.size() == held.size());
        const std::vector<float>& v = whole.values.at(p->name);
        std::copy(v.begin() + held.begin, v.begin() + held.end, p->value.data());
      }
      net.Allocate(kBatch);
      // Rank r's records are the group's records r·B .. (r+1)·B.
      Tensor& data = net.data_layer().data();
      REQUIRE(data.size() % kBatch == 0);
      const size_t floats = data.size() / kBatch;
      REQUIRE(net.data_layer().labels().size() == static_cast<size_t>(kBatch));
      for (size_t i = 0; i < static_cast<size_t>(kBatch); ++i) {
        const size_t rec = r * kBatch + i;
        for (size_t f = 0; f < floats; ++f) data[i * floats + f] = Pixel(rec, f);
        net.data_layer().labels()[i] = Label(rec);
      }
    }
  }

  // Forward and backward of step `step` on both ranks at once.
  void Step(uint64_t step) {
    auto pass = [&](int r) {
      RankRun& run = ranks[r];
      run.forward = run.net->Forward(Phase::kTrain, step);
      if (!run.forward.ok()) return;
      run.loss = run.net->loss_layer().loss();
      run.backward = run.net->Backward(step);
    };
    auto rank0 = std::async(std::launch::async, pass, 0);
    auto rank1 = std::async(std::launch::async, pass, 1);
    REQUIRE(rank0.wait_for(std::chrono::seconds(6)) == std::future_status::ready);
    REQUIRE(rank1.wait_for(std::chrono::seconds(6)) == std::future_status::ready);
    for (int r = 0; r < kM; ++r) {
      INFO("rank " << r << ": " << ranks[r].forward.ToString() << " / " << ranks[r].backward.ToString());
      REQUIRE(ranks[r].forward.ok());
      REQUIRE(ranks[r].backward.ok());
    }
  }
};

bool Near(double got, double want, double rel = 1e-5) {
  return std::fabs(got - want) <= rel * std::max(std::fabs(got), std::fabs(want)) + 1e-7;
}

// The group's loss is the mean of the ranks' (each over its own records);
// each parameter's gradient, summed over the ranks that hold each float and
// divided by the group's size (what the servers make of them), is the whole
// net's.
void CheckAgainstWhole(const Plan& plan, const Whole& whole, GroupRun& group) {
  const double loss = (group.ranks[0].loss + group.ranks[1].loss) / kM;
  INFO("group loss " << loss << ", whole net's " << whole.loss);
  CHECK(Near(loss, whole.loss));
  std::map<std::string, std::vector<double>> sums;
  std::map<std::string, std::vector<int>> holders;
  for (const auto& [name, g] : whole.grads) {
    sums[name].assign(g.size(), 0.0);
    holders[name].assign(g.size(), 0);
  }
  for (int r = 0; r < kM; ++r)
    for (Param* p : group.ranks[r].net->params()) {
      const Range held = HeldFloats(plan, *plan.FindParam(p->name), r);
      for (size_t i = 0; i < held.size(); ++i) {
        sums.at(p->name)[held.begin + i] += p->grad[i];
        ++holders.at(p->name)[held.begin + i];
      }
    }
  for (const auto& [param, grad] : whole.grads) {
    const std::string& name = param;  // INFO's lambda captures variables, not bindings (clang 14)
    const auto& want = grad;
    const LayerPlan& layer = LayerOfParam(plan, *plan.FindParam(name));
    size_t nonzero = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      INFO(name << "[" << i << "]: summed " << sums[name][i] / kM << ", whole net " << want[i]);
      // Split by records: both ranks hold it; otherwise exactly one.
      CHECK(holders[name][i] == (layer.partition_dim == 0 ? kM : 1));
      CHECK(Near(sums[name][i] / kM, want[i]));
      nonzero += std::fabs(want[i]) > 1e-6;
    }
    INFO(name);
    CHECK(nonzero > 0);  // the comparison is not of zeros only
  }
}

TEST_CASE(
    "partitioned net, hybrid: loss and every parameter gradient match the whole net on the group's records") {
  const Plan plan = MakeGroupPlan(kHybridDims, kHybridLocations);
  const Whole whole(plan);
  GroupRun group(plan, whole);
  // Rank 0 holds no fc2; rank 1 holds fc2 whole.
  std::vector<std::string> names0, names1;
  for (Param* p : group.ranks[0].net->params()) names0.push_back(p->name);
  for (Param* p : group.ranks[1].net->params()) names1.push_back(p->name);
  CHECK(names0 == std::vector<std::string>{"fc1.weight", "fc1.bias", "fc3.weight", "fc3.bias"});
  CHECK(names1 == std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight",
                                           "fc3.bias"});
  group.Step(0);
  CheckAgainstWhole(plan, whole, group);
}

TEST_CASE("partitioned net: the ranks' training FLOPs add up to the whole net's on the group's records") {
  for (const bool hybrid : {true, false}) {
    INFO((hybrid ? "hybrid" : "all data"));
    const Plan plan = hybrid ? MakeGroupPlan(kHybridDims, kHybridLocations) : MakeGroupPlan({}, {});
    const Whole whole(plan);
    GroupRun group(plan, whole);
    double want = 0.0;
    for (const auto& layer : whole.net->layers())
      want += kM * kBatch * (layer->ForwardFlopsPerRecord() + layer->BackwardFlopsPerRecord());
    const double got = group.ranks[0].net->TrainingFlops(kBatch) + group.ranks[1].net->TrainingFlops(kBatch);
    CHECK(want > 0.0);
    CHECK(Near(got, want));
  }
}

TEST_CASE("partitioned net, hybrid: the same again on later steps, the gradients set afresh each time") {
  const Plan plan = MakeGroupPlan(kHybridDims, kHybridLocations);
  const Whole whole(plan);
  GroupRun group(plan, whole);
  for (uint64_t step = 0; step < 3; ++step) {
    INFO("step " << step);
    group.Step(step);
    CheckAgainstWhole(plan, whole, group);
  }
}

TEST_CASE(
    "partitioned net, all data in a group of 2: the ranks' gradients average to the whole net's; no features "
    "move") {
  const Plan plan = MakeGroupPlan({}, {});
  const Whole whole(plan);
  GroupRun group(plan, whole);
  for (int r = 0; r < kM; ++r) {
    CHECK(group.ranks[r].net->DescribeConnections().empty());
    CHECK(group.ranks[r].net->params().size() == 6);
  }
  group.Step(0);
  CheckAgainstWhole(plan, whole, group);
  for (int r = 0; r < kM; ++r) {
    INFO("rank " << r);
    CHECK(group.ranks[r].net->feature_bytes_in() == 0);
    CHECK(group.ranks[r].net->feature_bytes_out() == 0);
  }
}

// Builds `yaml`'s net whole and partitioned (one worker), checks which ReLUs
// the partitioned one fused, and compares two steps' losses and gradients.
void CheckFusedAgainstWhole(const char* yaml, const std::vector<std::string>& fused) {
  JobConfig job;
  Status s = ParseJob(yaml, "fused.yaml", &job);
  INFO(s.ToString());
  REQUIRE(s.ok());
  PlanOptions options;
  options.endpoints = {"inproc://partitioned-net-test-server"};  // never dialled
  Plan plan;
  s = MakePlan(job, options, Partition{}, &plan);
  INFO(s.ToString());
  REQUIRE(s.ok());
  std::unique_ptr<Net> whole;
  std::unique_ptr<PartitionedNet> part;
  REQUIRE(Net::Build(plan.job, &whole).ok());
  REQUIRE(PartitionedNet::Build(plan, 0, nullptr, &part).ok());
  CHECK(part->FusedLayers() == fused);
  whole->Allocate(kBatch);
  part->Allocate(kBatch);
  const std::vector<Param*> wp = whole->params(), pp = part->params();
  REQUIRE(wp.size() == pp.size());
  for (size_t k = 0; k < wp.size(); ++k)
    for (size_t i = 0; i < wp[k]->value.size(); ++i) wp[k]->value[i] = pp[k]->value[i] = ParamValue(k, i);
  const size_t floats = whole->data_layer().data().size() / kBatch;
  for (size_t r = 0; r < static_cast<size_t>(kBatch); ++r) {
    for (size_t f = 0; f < floats; ++f)
      whole->data_layer().data()[r * floats + f] = part->data_layer().data()[r * floats + f] =
          Pixel(r, f) - 0.5f;
    whole->data_layer().labels()[r] = part->data_layer().labels()[r] = Label(r);
  }
  for (uint64_t step = 0; step < 2; ++step) {
    INFO("step " << step);
    whole->Forward(Phase::kTrain);
    whole->Backward();
    REQUIRE(part->Forward(Phase::kTrain, step).ok());
    REQUIRE(part->Backward(step).ok());
    CHECK(part->loss_layer().loss() == whole->loss_layer().loss());
    for (size_t k = 0; k < wp.size(); ++k) {
      INFO(wp[k]->name);
      CHECK(SameBits(wp[k]->grad, pp[k]->grad));
    }
  }
}

TEST_CASE(
    "partitioned net: a ReLU fused into the batch norm or add before it leaves the loss and every gradient "
    "the whole net's, bit for bit") {
  CheckFusedAgainstWhole(kNormed, {"relu1", "relu3"});
}

TEST_CASE(
    "partitioned net: a ReLU fused into the max pooling after it leaves the loss and every gradient the "
    "whole net's, bit for bit") {
  CheckFusedAgainstWhole(kPooled, {"relu1", "relu2"});
}

TEST_CASE("partitioned net: DescribeConnections names each connection layer, in the order they run") {
  const Plan plan = MakeGroupPlan(kHybridDims, kHybridLocations);
  const Whole whole(plan);
  GroupRun group(plan, whole);
  const std::vector<std::string> want = {
      "concat: data (rows) -> fc1 (replicated)",
      "bridge: relu1 (columns) -> fc2 (rank 1)",
      "bridge: fc2 (rank 1) -> fc3 (replicated)",
      "concat: fc3 (columns) -> loss (rows)",
  };
  for (int r = 0; r < kM; ++r) {
    INFO("rank " << r);
    CHECK(group.ranks[r].net->DescribeConnections() == want);
  }
}

TEST_CASE("partitioned net: feature bytes count what each rank's connections received and sent back") {
  const Plan plan = MakeGroupPlan(kHybridDims, kHybridLocations);
  const Whole whole(plan);
  GroupRun group(plan, whole);
  for (int r = 0; r < kM; ++r) {
    CHECK(group.ranks[r].net->feature_bytes_in() == 0);
    CHECK(group.ranks[r].net->feature_bytes_out() == 0);
  }
  group.Step(0);
  // Floats per connection, with B = 3 records per rank:
  //   data -> fc1 (replicated):  in 3×6 each; no gradient (data wants none)
  //   relu1 -> fc2 (rank 1):     rank 1 in 6×2 from rank 0, the same out
  //   fc2 -> fc3 (replicated):   rank 0 in 6×4 from rank 1, the same out
  //   fc3 -> loss (rows):        rank 0 in 3×2, rank 1 in 3×1; the same out
  CHECK(group.ranks[0].net->feature_bytes_in() == 4 * (18 + 0 + 24 + 6));
  CHECK(group.ranks[0].net->feature_bytes_out() == 4 * (0 + 0 + 24 + 6));
  CHECK(group.ranks[1].net->feature_bytes_in() == 4 * (18 + 12 + 0 + 3));
  CHECK(group.ranks[1].net->feature_bytes_out() == 4 * (0 + 12 + 0 + 3));
  group.Step(1);
  CHECK(group.ranks[0].net->feature_bytes_in() == 2 * 4 * (18 + 0 + 24 + 6));
  CHECK(group.ranks[1].net->feature_bytes_out() == 2 * 4 * (0 + 12 + 0 + 3));
}

// MakePlan and LoadPlan refuse such plans (tests/unit/plan): a plan edited
// in memory reaches the net all the same, which refuses it too.
TEST_CASE("partitioned net: a plan that puts the loss or the data layer off a rank is refused there") {
  Plan plan = MakeGroupPlan(std::vector<int>(6, 0), {});
  plan.layers[5].partition_dim = -1;  // the loss on rank 1 only
  plan.layers[5].location = 1;
  GroupChannel channel;
  REQUIRE(channel.Open(GroupPeersOf(plan, 0, kTimeoutMs)).ok());
  std::unique_ptr<PartitionedNet> net;
  Status s = PartitionedNet::Build(plan, 0, &channel, &net);
  CHECK(s.IsInvalidArgument());
  CHECK(s.message() ==
        "the plan places the data or the loss layer off worker 0 (both are partitioned by records)");
  CHECK(net == nullptr);

  plan = MakeGroupPlan(std::vector<int>(6, 0), {});
  plan.layers[0].partition_dim = -1;  // the data layer on rank 1 only
  plan.layers[0].location = 1;
  GroupChannel channel2;
  REQUIRE(channel2.Open(GroupPeersOf(plan, 0, kTimeoutMs)).ok());
  s = PartitionedNet::Build(plan, 0, &channel2, &net);
  INFO(s.ToString());
  CHECK(s.IsInvalidArgument());
  // Refused on rank 0 as the loss layer is set up: its data source is not
  // on this rank (the message comes from the loss layer's setup).
  CHECK(Contains(s.message(), "layer 'loss'"));
  CHECK(Contains(s.message(), "data layer"));
  CHECK(net == nullptr);
}

TEST_CASE(
    "partitioned net: a layer that cannot split its features, and a group without a channel, are refused") {
  // softmax_loss split by features (MakePlan refuses it: edited in memory).
  Plan plan = MakeGroupPlan(std::vector<int>(6, 0), {});
  plan.layers[5].partition_dim = 1;
  GroupChannel channel;
  REQUIRE(channel.Open(GroupPeersOf(plan, 0, kTimeoutMs)).ok());
  std::unique_ptr<PartitionedNet> net;
  Status s = PartitionedNet::Build(plan, 0, &channel, &net);
  CHECK(s.IsInvalidArgument());
  CHECK(s.message() == "layer 'loss' (softmax_loss) cannot split its features over the workers of a group");

  plan = MakeGroupPlan(kHybridDims, kHybridLocations);
  s = PartitionedNet::Build(plan, 0, nullptr, &net);
  CHECK(s.IsInvalidArgument());
  CHECK(s.message() == "a group of 2 needs a channel");
}

TEST_CASE(
    "GroupPeersOf gives a worker its group's endpoints, its rank and the largest block a peer may send") {
  std::string text = kMlp;
  const std::string one_group = "cluster: {nworkers_per_group: 2, consistency: bsp}";
  REQUIRE(text.find(one_group) != std::string::npos);
  text.replace(text.find(one_group), one_group.size(),
               "cluster: {nworker_groups: 2, nworkers_per_group: 2, consistency: async}");
  JobConfig job;
  Status s = ParseJob(text, "mlp.yaml", &job);  // workers 0, 1 | 2, 3
  INFO(s.ToString());
  REQUIRE(s.ok());
  Partition partition;
  partition.group_size = kM;
  PlanOptions options;
  options.endpoints = {"inproc://s"};
  options.worker_endpoints = {"inproc://w0", "inproc://w1", "inproc://w2", "inproc://w3"};
  Plan plan;
  s = MakePlan(job, options, partition, &plan);
  INFO(s.ToString());
  REQUIRE(s.ok());
  const GroupPeers peers = GroupPeersOf(plan, 3, 1234);
  CHECK(peers.endpoints == std::vector<std::string>{"inproc://w2", "inproc://w3"});
  CHECK(peers.first_worker == 2);
  CHECK(peers.rank == 1);
  CHECK(peers.plan_hash == plan.hash_value());
  CHECK(peers.timeout_ms == 1234);
  // The widest feature (data: 6 floats) × batch 3 × group of 2.
  CHECK(peers.max_block_floats == 6 * 3 * 2);
}

}  // namespace
}  // namespace shoal
