// Tests for lib/ps/server_config: what a server works out of its plan once.
#include "ps/server_config.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "config/job.h"
#include "plan/partition.h"
#include "plan/plan.h"

namespace shoal {
namespace {

std::string Mlp(const std::string& cluster) {
  return "model:\n"
         "  layers:\n"
         "    - {name: data, type: data, shape: [1, 28, 28]}\n"
         "    - {name: fc1, type: fully_connected, srclayers: data, num_output: 256}\n"
         "    - {name: relu1, type: relu, srclayers: fc1}\n"
         "    - {name: fc2, type: fully_connected, srclayers: relu1, num_output: 10}\n"
         "    - {name: loss, type: softmax_loss, srclayers: [fc2, data]}\n"
         "train: {steps: 5, learning_rate: 0.05, checkpoint_every: 7}\n"
         "cluster: " +
         cluster + "\n";
}

Plan MakePlanFor(const std::string& cluster, const Partition& partition = Partition()) {
  JobConfig job;
  Status s = ParseJob(Mlp(cluster), "mlp.yaml", &job);
  INFO(s.ToString());
  REQUIRE(s.ok());
  Plan plan;
  s = MakePlan(job, PlanOptions(), partition, &plan);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return plan;
}

TEST_CASE("a server's config lists its slices and layers, who holds what, and what the job says") {
  // fc1 split over a group of 2 (its rows are each rank's), fc2 on every rank's records.
  Partition partition;
  partition.group_size = 2;
  partition.dims = {0, 1, 1, 0, 0};
  Plan plan = MakePlanFor("{nworkers_per_group: 2, nservers_per_group: 2, slice_floats: 100000}", partition);
  ServerConfig c0, c1;
  REQUIRE(MakeServerConfig(plan, 0, &c0).ok());
  REQUIRE(MakeServerConfig(plan, 1, &c1).ok());
  CHECK(c0.id == 0);
  CHECK(c0.endpoint == plan.servers[0].endpoint);
  CHECK(c0.plan_hash == plan.hash);
  CHECK(c0.workers == 2);
  CHECK(c0.served == 2);
  CHECK(c0.consistency == ConsistencyModel::kBsp);
  CHECK(c0.checkpoint_every == 7);
  CHECK(c0.servers == 2);
  // Every slice is on exactly one server, each listed once, in key order.
  std::vector<uint32_t> keys;
  for (const auto& s : c0.slices) keys.push_back(s.key);
  for (const auto& s : c1.slices) keys.push_back(s.key);
  std::sort(keys.begin(), keys.end());
  CHECK(keys.size() == plan.slices.size());
  for (size_t i = 0; i < keys.size(); ++i) CHECK(keys[i] == i);
  // fc1's rows are held by one rank each: a slice of fc1 has one holder, fc2's two.
  for (const ServerConfig* c : {&c0, &c1})
    for (const SliceSpec& s : c->slices) {
      INFO("slice " << s.key << " of " << s.param);
      CHECK(c->holders_per_key[s.key] == (s.param.rfind("fc1.", 0) == 0 ? 1 : 2));
      CHECK(s.shape == plan.FindParam(s.param)->shape);
    }
  // Each layer's held keys per worker are the worker's keys of that layer here.
  for (const ServerConfig* c : {&c0, &c1})
    for (int w = 0; w < 2; ++w) {
      std::vector<uint32_t> held;
      for (const LayerSpec& l : c->layers) held.insert(held.end(), l.held[w].begin(), l.held[w].end());
      std::sort(held.begin(), held.end());
      CHECK(held == c->held[w]);
    }
  // The largest request: a worker's update of what it holds here, or a put of every slice.
  size_t all = 0;
  for (const SliceSpec& s : c0.slices) all += kEntryHeaderBytes + 4 * s.count;
  CHECK(c0.max_request_bytes >= kHeaderBytes + all);
  CHECK(c0.max_request_bytes < kHeaderBytes + all + (1u << 20));
}

TEST_CASE("a slice cut from a larger parameter is named by where it starts") {
  Plan plan = MakePlanFor("{nworkers_per_group: 1, slice_floats: 100000}");
  ServerConfig c;
  REQUIRE(MakeServerConfig(plan, 0, &c).ok());
  std::vector<std::string> names;
  for (const auto& s : c.slices) names.push_back(s.name);
  CHECK(names[0] == "fc1.weight[0]");
  CHECK(names[1] == "fc1.weight[100000]");
  CHECK(std::find(names.begin(), names.end(), "fc1.bias") != names.end());
}

TEST_CASE(
    "server groups: each serves its own worker groups and syncs with all the others, or the next in a ring") {
  const std::string hogwild =
      "{nworker_groups: 3, nserver_groups: 3, consistency: async, sync_freq: 5, sync_topology: ";
  Plan all = MakePlanFor(hogwild + "all}");
  ServerConfig c;
  REQUIRE(MakeServerConfig(all, 1, &c).ok());
  CHECK(c.group == 1);
  CHECK(c.serves == std::vector<bool>{false, true, false});
  CHECK(c.served == 1);
  CHECK(c.sync_freq == 5);
  CHECK(c.sync_neighbours == std::vector<int>{0, 2});
  CHECK(c.sync_endpoints == std::vector<std::string>{all.servers[0].endpoint, all.servers[2].endpoint});
  CHECK(c.keys_per_group * 3 == all.slices.size());
  Plan ring = MakePlanFor(hogwild + "ring}");
  REQUIRE(MakeServerConfig(ring, 2, &c).ok());
  CHECK(c.sync_neighbours == std::vector<int>{0});
}

TEST_CASE("a server id outside the plan is refused naming how many it has") {
  Plan plan = MakePlanFor("{nworkers_per_group: 1}");
  ServerConfig c;
  Status s = MakeServerConfig(plan, 1, &c);
  CHECK(s.message() == "server id 1 is not in the plan (it has 1 servers)");
}

}  // namespace
}  // namespace shoal
