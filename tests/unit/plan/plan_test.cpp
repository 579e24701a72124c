// Tests for lib/plan (the data-parallel plan, plan.json and its hash) and
// lib/ps/param_init (initial values, the same on every server).
#include "plan/plan.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "config/job.h"
#include "core/hash.h"
#include "plan/partition.h"
#include "ps/param_init.h"
#include "test_util.h"

namespace shoal {
namespace {

using nlohmann::json;

// configs/fashion-mlp.yaml's model; `cluster` replaces its cluster section.
std::string MlpJob(
    const std::string& cluster = "{nworker_groups: 1, nworkers_per_group: 2, consistency: bsp}") {
  return "name: fashion-mlp\n"
         "model:\n"
         "  layers:\n"
         "    - {name: data, type: data, shape: [1, 28, 28]}\n"
         "    - {name: fc1, type: fully_connected, srclayers: data, num_output: 256}\n"
         "    - {name: relu1, type: relu, srclayers: fc1}\n"
         "    - {name: fc2, type: fully_connected, srclayers: relu1, num_output: 128}\n"
         "    - {name: relu2, type: relu, srclayers: fc2}\n"
         "    - {name: fc3, type: fully_connected, srclayers: relu2, num_output: 10}\n"
         "    - {name: loss, type: softmax_loss, srclayers: [fc3, data]}\n"
         "train: {batch_size: 32, epochs: 2, updater: momentum, learning_rate: 0.05, momentum: 0.9}\n"
         "cluster: " +
         cluster +
         "\n"
         "data: {shards: runs/shards/fashion-mnist-2}\n";
}

Plan MakePlan(const std::string& text, const PlanOptions& options = PlanOptions()) {
  JobConfig job;
  Status s = ParseJob(text, "mlp.yaml", &job);
  INFO(s.ToString());
  REQUIRE(s.ok());
  Plan plan;
  s = MakeDataParallelPlan(job, options, &plan);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return plan;
}

// Every parameter's slices lie in key order, start at 0, follow each other
// without gap or overlap and end at the parameter's size; every slice belongs
// to exactly one parameter.
void CheckSlicesCoverParams(const Plan& plan, size_t max_slice) {
  std::set<uint32_t> seen;
  for (size_t k = 0; k < plan.slices.size(); ++k) CHECK(plan.slices[k].key == k);
  for (const auto& p : plan.params) {
    INFO("param '" << p.name << "'");
    REQUIRE(!p.slices.empty());
    size_t next = 0;
    for (uint32_t key : p.slices) {
      REQUIRE(key < plan.slices.size());
      const SlicePlan& s = plan.slices[key];
      CHECK(s.param == p.name);
      CHECK(s.offset == next);
      CHECK(s.count > 0);
      CHECK(s.count <= max_slice);
      CHECK(s.server >= 0);
      CHECK(s.server < static_cast<int>(plan.servers.size()));
      CHECK(seen.insert(key).second);
      next += s.count;
    }
    CHECK(next == NumElements(p.shape));
    CHECK(std::is_sorted(p.slices.begin(), p.slices.end()));
  }
  CHECK(seen.size() == plan.slices.size());
}

TEST_CASE("the data-parallel plan puts every layer on partition_dim 0 with its cost facts") {
  Plan plan = MakePlan(MlpJob());
  REQUIRE(plan.layers.size() == 7);
  for (const auto& l : plan.layers) {
    INFO("layer '" << l.name << "'");
    CHECK(l.partition_dim == 0);
  }
  CHECK(plan.layers[0].name == "data");
  CHECK(plan.layers[0].feature_size == 784);
  CHECK(plan.layers[0].params == 0);
  CHECK(plan.layers[1].name == "fc1");
  CHECK(plan.layers[1].type == "fully_connected");
  CHECK(plan.layers[1].params == 784 * 256 + 256);
  CHECK(plan.layers[1].feature_size == 256);
  CHECK(plan.layers[1].forward_flops == 2.0 * 784 * 256);
  CHECK(plan.layers[6].name == "loss");
  CHECK(plan.layers[6].feature_size == 10);
}

TEST_CASE("the plan lists every parameter with its shape and init, in layer order") {
  Plan plan = MakePlan(MlpJob());
  std::vector<std::string> names;
  for (const auto& p : plan.params) names.push_back(p.name);
  CHECK(names == std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight",
                                          "fc3.bias"});
  const ParamPlan* w = plan.FindParam("fc2.weight");
  REQUIRE(w != nullptr);
  CHECK(w->shape == Shape{128, 256});
  CHECK(w->init.kind == ParamInit::Kind::kUniform);
  CHECK(w->init.value == doctest::Approx(1.0 / 16.0));  // 1/sqrt(fan_in 256)
  CHECK(plan.FindParam("fc4.weight") == nullptr);
}

TEST_CASE("with the default slice size every parameter is one slice on the one server") {
  Plan plan = MakePlan(MlpJob());
  CHECK(plan.slices.size() == plan.params.size());
  CheckSlicesCoverParams(plan, 1 << 20);
  for (const auto& s : plan.slices) CHECK(s.server == 0);
  REQUIRE(plan.servers.size() == 1);
  CHECK(plan.servers[0].id == 0);
  CHECK(plan.servers[0].endpoint == "tcp://127.0.0.1:5555");
  // Data parallel: groups of one, no feature endpoints.
  REQUIRE(plan.workers.size() == 2);
  CHECK(plan.workers[1].id == 1);
  CHECK(plan.workers[1].group == 1);
  CHECK(plan.workers[1].rank == 0);
  CHECK(plan.workers[1].endpoint.empty());
}

// Each server's floats (of the first group).
std::vector<size_t> ServerFloats(const Plan& plan, int servers) {
  std::vector<size_t> floats(servers, 0);
  for (const auto& s : plan.slices)
    if (s.server < servers) floats[s.server] += s.count;
  return floats;
}

TEST_CASE("a small slice_floats cuts parameters into slices; each server holds 1/S of every parameter") {
  Plan plan = MakePlan(MlpJob("{nworkers_per_group: 2, nservers_per_group: 3, slice_floats: 10000}"));
  CheckSlicesCoverParams(plan, 10000);
  for (const ParamPlan& p : plan.params) {
    INFO(p.name);
    std::vector<size_t> floats(3, 0);
    for (uint32_t key : p.slices) floats[plan.slices[key].server] += plan.slices[key].count;
    CHECK(*std::max_element(floats.begin(), floats.end()) - *std::min_element(floats.begin(), floats.end()) <=
          1);
  }
}

TEST_CASE("a slice_floats that would cut more than kMaxPlanSlices slices is refused, none made") {
  // Slices of one float: the MLP's 235,146 fit; with fc1 of 2048 outputs, 1,871,242 do not.
  JobConfig job;
  REQUIRE(ParseJob(MlpJob("{nworkers_per_group: 1, slice_floats: 1}"), "mlp.yaml", &job).ok());
  Plan plan;
  REQUIRE(MakeDataParallelPlan(job, PlanOptions(), &plan).ok());
  CHECK(plan.slices.size() == 235146);
  std::string wide = MlpJob("{nworkers_per_group: 1, slice_floats: 1}");
  wide.replace(wide.find("num_output: 256"), 15, "num_output: 2048");
  REQUIRE(ParseJob(wide, "mlp.yaml", &job).ok());
  const Status s = MakeDataParallelPlan(job, PlanOptions(), &plan);
  CHECK(s.IsInvalidArgument());
  CHECK(s.message().find("cluster.slice_floats 1 cuts the parameters' 1871242 floats into 1871242 slices") !=
        std::string::npos);
}

TEST_CASE("with the default slice size the servers' shares are equal") {
  for (int servers : {2, 3, 8}) {
    INFO(servers << " servers");
    Plan plan =
        MakePlan(MlpJob("{nworkers_per_group: 1, nservers_per_group: " + std::to_string(servers) + "}"));
    CheckSlicesCoverParams(plan, 1 << 20);
    const std::vector<size_t> floats = ServerFloats(plan, servers);
    // At most one float apart for each parameter.
    CHECK(*std::max_element(floats.begin(), floats.end()) - *std::min_element(floats.begin(), floats.end()) <=
          plan.params.size());
  }
}

TEST_CASE("an endpoint names a transport, and for TCP a host, bracketed where IPv6, and a port") {
  for (const char* good : {"tcp://127.0.0.1:5555", "tcp://[::1]:5555", "tcp://node-3:1", "ipc:///tmp/s.sock",
                           "inproc://shoal-server-0", "tls+tcp://h:65535"})
    CHECK_MESSAGE(EndpointProblem(good).empty(), good);
  CHECK(EndpointProblem("127.0.0.1:5555") == "it is not a transport://address");
  CHECK(EndpointProblem("tcp://h:65536") == "its port is not 1 to 65535");
  CHECK(EndpointProblem("tcp://:5555") == "it names no host");
  for (const char* bad : {"tcp://[::1:5555", "tcp://::1]:5555", "tcp://[]:5555", "tcp://[a]b]:5555"})
    CHECK_MESSAGE(EndpointProblem(bad) == "its host is neither a name nor an address in brackets", bad);
}

TEST_CASE("server endpoints come from base_port, or from the options, which must match in number") {
  const std::string three = "{nservers_per_group: 3}";
  PlanOptions options;
  options.base_port = 7100;
  Plan plan = MakePlan(MlpJob(three), options);
  REQUIRE(plan.servers.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(plan.servers[i].id == i);
    CHECK(plan.servers[i].endpoint == "tcp://127.0.0.1:" + std::to_string(7100 + i));
  }
  options.endpoints = {"ipc:///tmp/a", "ipc:///tmp/b", "inproc://c"};
  plan = MakePlan(MlpJob(three), options);
  CHECK(plan.servers[2].endpoint == "inproc://c");

  JobConfig job;
  REQUIRE(ParseJob(MlpJob(three), "mlp.yaml", &job).ok());
  options.endpoints = {"inproc://only-one"};
  Status s = MakeDataParallelPlan(job, options, &plan);
  CHECK(s.IsInvalidArgument());
  CHECK(s.message() == "the job has 3 servers but 1 endpoints were given");
}

TEST_CASE("workers are numbered globally across groups, with endpoints for their features") {
  JobConfig job;
  REQUIRE(ParseJob(MlpJob("{nworker_groups: 2, nworkers_per_group: 3, consistency: async}"), "mlp.yaml", &job)
              .ok());
  Partition partition;
  partition.group_size = 3;
  Plan plan;
  REQUIRE(MakePlan(job, PlanOptions(), partition, &plan).ok());
  REQUIRE(plan.workers.size() == 6);
  bool exchange = false;
  REQUIRE(WorkersExchange(plan, &exchange).ok());
  CHECK(exchange);  // a group's features pass between its workers inside each step
  for (int i = 0; i < 6; ++i) {
    CHECK(plan.workers[i].id == i);
    CHECK(plan.workers[i].group == i / 3);
    CHECK(plan.workers[i].rank == i % 3);
    CHECK(plan.workers[i].endpoint == "tcp://127.0.0.1:" + std::to_string(5555 + 1 + i));
  }
  partition.group_size = 4;
  Status s = MakePlan(job, PlanOptions(), partition, &plan);
  CHECK(s.message() == "groups of 4 do not divide the job's 6 workers");
}

TEST_CASE(
    "a batch norm synchronised over the workers needs BSP and groups of one, and gives them endpoints") {
  auto job_text = [](const std::string& cluster) {
    std::string text = MlpJob(cluster);
    const std::string fc1 = "num_output: 256}\n";
    return text.insert(text.find(fc1) + fc1.size(),
                       "    - {name: bn1, type: batch_norm, srclayers: fc1, sync: true}\n");
  };
  // fc1 feeds relu1 still: bn1 is a branch of its own, enough to plan.
  Plan plan = MakePlan(job_text("{nworker_groups: 1, nworkers_per_group: 2, consistency: bsp}"));
  REQUIRE(plan.workers.size() == 2);
  CHECK(plan.workers[0].endpoint == "tcp://127.0.0.1:5556");  // after the one server
  CHECK(plan.workers[1].endpoint == "tcp://127.0.0.1:5557");
  bool exchange = false;
  REQUIRE(WorkersExchange(plan, &exchange).ok());
  CHECK(exchange);  // the sums pass between the workers inside each step
  plan = MakePlan(job_text("{nworker_groups: 1, nworkers_per_group: 1, consistency: bsp}"));
  REQUIRE(WorkersExchange(plan, &exchange).ok());
  CHECK_FALSE(exchange);  // one worker has nobody to sum with
  plan = MakePlan(MlpJob("{nworker_groups: 1, nworkers_per_group: 2, consistency: bsp}"));
  REQUIRE(WorkersExchange(plan, &exchange).ok());
  CHECK_FALSE(exchange);  // data parallel: each worker talks to its servers alone

  JobConfig job;
  REQUIRE(
      ParseJob(job_text("{nworker_groups: 2, nworkers_per_group: 1, consistency: async}"), "mlp.yaml", &job)
          .ok());
  Status s = MakeDataParallelPlan(job, PlanOptions(), &plan);
  CHECK(s.message() ==
        "layer 'bn1' sums its statistics over the workers (sync: true), which needs "
        "cluster.consistency bsp");
  REQUIRE(ParseJob(job_text("{nworker_groups: 1, nworkers_per_group: 2, consistency: bsp}"), "mlp.yaml", &job)
              .ok());
  Partition partition;
  partition.group_size = 2;
  s = MakePlan(job, PlanOptions(), partition, &plan);
  CHECK(s.message() ==
        "layer 'bn1' sums its statistics over the workers (sync: true), which needs groups of "
        "one worker, not 2: plan it data parallel (--strategy data)");
}

TEST_CASE("a feature-partitioned layer's parameters are cut where each rank's rows begin") {
  JobConfig job;
  REQUIRE(ParseJob(MlpJob(), "mlp.yaml", &job).ok());  // fc1 784->256, fc2 256->128, fc3 128->10
  Partition partition;
  partition.group_size = 2;
  partition.dims.assign(7, 0);
  partition.dims[1] = 1;  // fc1
  partition.locations.assign(7, 0);
  partition.dims[5] = -1;  // fc3 on rank 1
  partition.locations[5] = 1;
  Plan plan;
  REQUIRE(MakePlan(job, PlanOptions(), partition, &plan).ok());
  const ParamPlan& w1 = *plan.FindParam("fc1.weight");
  REQUIRE(w1.slices.size() == 2);
  CHECK(plan.slices[w1.slices[1]].offset == 128 * 784);
  CHECK(HeldFloats(plan, w1, 1).begin == 128 * 784);
  CHECK(HeldFloats(plan, *plan.FindParam("fc3.bias"), 0).empty());
  CHECK(HeldFloats(plan, *plan.FindParam("fc3.bias"), 1).size() == 10);
  CHECK(HeldFloats(plan, *plan.FindParam("fc2.weight"), 0).size() == 256 * 128);
  // Worker 0 holds half of fc1, fc2 whole, none of fc3; fc2's keys are held by both.
  std::vector<int> holders = HoldersPerKey(plan);
  CHECK(holders[w1.slices[0]] == 1);
  CHECK(holders[plan.FindParam("fc2.weight")->slices[0]] == 2);
  CHECK(holders[plan.FindParam("fc3.weight")->slices[0]] == 1);
  std::vector<uint32_t> keys = KeysHeldBy(plan, 0);
  CHECK(keys.size() == 4);  // fc1 weight and bias halves, fc2 weight and bias
}

TEST_CASE("the data and the loss layer stay on each worker's own records: another partition is refused") {
  JobConfig job;
  REQUIRE(ParseJob(MlpJob(), "mlp.yaml", &job).ok());
  for (size_t layer : {0u, 6u})
    for (int dim : {1, -1}) {
      Partition partition;
      partition.group_size = 2;
      partition.dims.assign(7, 0);
      partition.dims[layer] = dim;
      Plan plan;
      Status s = MakePlan(job, PlanOptions(), partition, &plan);
      INFO(s.ToString());
      CHECK(Contains(s.message(), "works on each worker's own records: it takes partition_dim 0"));
    }
}

TEST_CASE("a job that does not build gives no plan") {
  JobConfig job;
  REQUIRE(ParseJob(MlpJob(), "mlp.yaml", &job).ok());
  job.layers[1].type = "fully_connectd";
  Plan plan;
  Status s = MakeDataParallelPlan(job, PlanOptions(), &plan);
  CHECK(!s.ok());
  CHECK(Contains(s.message(), "'fully_connectd', not a layer type"));
}

TEST_CASE("the plan hash depends on the content") {
  Plan a = MakePlan(MlpJob());
  Plan b = MakePlan(MlpJob());
  CHECK(a.hash == b.hash);
  CHECK(a.hash.size() == 16);
  CHECK(a.hash_value() != 0);
  Plan c = MakePlan(MlpJob("{nworkers_per_group: 3}"));
  CHECK(c.hash != a.hash);
  PlanOptions other;
  other.base_port = 6000;
  CHECK(MakePlan(MlpJob(), other).hash != a.hash);
}

}  // namespace
}  // namespace shoal
