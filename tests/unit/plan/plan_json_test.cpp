// Tests for lib/plan/plan_json: plan.json written and read back, and every
// edit or inconsistency refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "config/job.h"
#include "core/hash.h"
#include "plan/partition.h"
#include "plan/plan.h"
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

TEST_CASE("PlanToJson then PlanFromJson gives the same plan and hash") {
  Plan plan = MakePlan(MlpJob("{nworkers_per_group: 2, nservers_per_group: 2, slice_floats: 50000}"));
  json j = PlanToJson(plan);
  CHECK(j.at("format") == "shoal-plan");
  CHECK(j.at("hash") == plan.hash);
  CHECK(j.at("cluster").at("workers") == 2);
  // Through text, as dl-plan writes it and every process reads it.
  json reread = json::parse(j.dump(2));
  Plan back;
  Status s = PlanFromJson(reread, "plan.json", &back);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(back.hash == plan.hash);
  CHECK(back.hash_value() == plan.hash_value());
  CHECK(PlanToJson(back) == j);
  CHECK(back.job.cluster.servers() == 2);
  CHECK(back.job.train.batch_size == 32);
  REQUIRE(back.slices.size() == plan.slices.size());
  for (size_t k = 0; k < plan.slices.size(); ++k) {
    CHECK(back.slices[k].param == plan.slices[k].param);
    CHECK(back.slices[k].offset == plan.slices[k].offset);
    CHECK(back.slices[k].count == plan.slices[k].count);
    CHECK(back.slices[k].server == plan.slices[k].server);
  }
  CHECK(back.params[0].init.value == plan.params[0].init.value);
}

TEST_CASE(
    "a parameter's init_from and lr_mult go through plan.json; dl-plan refuses a checkpoint that does not "
    "fit") {
  TempDir dir;
  Checkpoint source;
  source.plan_hash = "0123456789abcdef";
  source.server = -1;
  source.servers = 1;
  source.tensors.push_back({"enc.weight", "enc.weight", "value", 0, 0, {2, 4}, std::vector<float>(8, 0.5f)});
  source.tensors.push_back({"enc.bias", "enc.bias", "value", 1, 0, {2}, {1, 2}});
  REQUIRE(WriteCheckpoint(dir.path + "/enc.ckpt", source).ok());
  auto job = [&](int outputs) {
    return "model:\n  layers:\n    - {name: data, type: data, shape: [4]}\n"
           "    - {name: fc, type: fully_connected, srclayers: data, num_output: " +
           std::to_string(outputs) + ", init_from: '" + dir.path +
           "/enc.ckpt:enc', lr_mult: 0.25}\n"
           "    - {name: loss, type: softmax_loss, srclayers: [fc, data]}\n";
  };
  Plan plan = MakePlan(job(2));
  json j = json::parse(PlanToJson(plan).dump());
  CHECK(j.at("params")[0].at("init") == json{{"kind", "checkpoint"},
                                             {"value", 0.0},
                                             {"checkpoint", dir.path + "/enc.ckpt"},
                                             {"param", "enc.weight"},
                                             {"transpose", false}});
  CHECK(j.at("params")[1].at("lr_mult") == 0.25);
  Plan back;
  REQUIRE(PlanFromJson(j, "plan.json", &back).ok());
  CHECK(back.params[1].init.param == "enc.bias");
  CHECK(back.params[1].lr_mult == 0.25f);
  std::vector<float> bias;
  REQUIRE(InitialValues("fc.bias", back.params[1].shape, back.params[1].init, 1, &bias).ok());
  CHECK(bias == std::vector<float>{1, 2});
  // Three outputs: the checkpoint's weight is [2, 4], the layer's [3, 4].
  JobConfig three;
  REQUIRE(ParseJob(job(3), "job.yaml", &three).ok());
  Plan refused;
  Status s = MakeDataParallelPlan(three, PlanOptions(), &refused);
  CHECK(Contains(s.message(),
                 "parameter 'fc.weight' (init_from '" + dir.path + "/enc.ckpt'): 'enc.weight' is [2,4]"));
}

TEST_CASE("editing any field of plan.json makes PlanFromJson refuse it, naming the hash") {
  Plan plan = MakePlan(MlpJob("{nworkers_per_group: 2, nservers_per_group: 2, slice_floats: 50000}"));
  const json original = PlanToJson(plan);
  struct Edit {
    const char* what;
    void (*apply)(json*);
  };
  const Edit edits[] = {
      {"a slice's count", [](json* j) { (*j)["slices"][1]["count"] = 49999; }},
      {"a slice's offset", [](json* j) { (*j)["slices"][1]["offset"] = 1; }},
      {"a slice's server", [](json* j) { (*j)["slices"][0]["server"] = 1; }},
      {"a layer's partition_dim", [](json* j) { (*j)["layers"][2]["partition_dim"] = 1; }},
      {"a layer's params", [](json* j) { (*j)["layers"][1]["params"] = 7; }},
      {"a param's init value", [](json* j) { (*j)["params"][0]["init"]["value"] = 0.5; }},
      {"a param's shape", [](json* j) { (*j)["params"][1]["shape"] = {128}; }},
      {"a server's endpoint", [](json* j) { (*j)["servers"][1]["endpoint"] = "tcp://10.0.0.1:5556"; }},
      {"a worker's group", [](json* j) { (*j)["workers"][1]["group"] = 0; }},
      {"the job", [](json* j) { (*j)["job"]["train"]["learning_rate"] = 0.5; }},
      {"the cluster summary", [](json* j) { (*j)["cluster"]["workers"] = 4; }},
      {"the data summary", [](json* j) { (*j)["data"]["shards"] = "elsewhere"; }},
      {"the recorded hash", [](json* j) { (*j)["hash"] = "0000000000000001"; }},
  };
  for (const auto& edit : edits) {
    INFO("editing " << std::string(edit.what));
    json j = original;
    edit.apply(&j);
    Plan back;
    Status s = PlanFromJson(j, "plan.json", &back);
    INFO(s.ToString());
    CHECK(s.IsCorruption());
    CHECK(Contains(s.message(), "plan.json: content hash "));
    CHECK(Contains(s.message(), "does not match the recorded"));
  }
}

// Recomputes a plan's hash after an edit, as anyone can.
void Rehash(json* j) {
  j->erase("hash");
  (*j)["hash"] = HexU64(Fnv1a64(j->dump()));
}

TEST_CASE("PlanFromJson refuses what is not a plan, or a plan of another format version") {
  Plan plan = MakePlan(MlpJob());
  Plan back;
  json j = PlanToJson(plan);
  j["format"] = "shoal-checkpoint";
  CHECK(PlanFromJson(j, "x.json", &back).message() == "x.json: not a shoal plan");
  j = PlanToJson(plan);
  j["version"] = 1;
  CHECK(PlanFromJson(j, "x.json", &back).message() ==
        "x.json: plan format version 1, this build reads 2 (plan the job again with this build's dl-plan)");
  j = PlanToJson(plan);
  j.erase("slices");
  Status s = PlanFromJson(j, "x.json", &back);
  CHECK(s.IsInvalidArgument());
  CHECK(s.message() == "'x.json': field 'slices' is missing");
  j = PlanToJson(plan);
  j["slices"][0]["param"] = "nope.weight";
  Rehash(&j);  // as anyone editing a plan can
  CHECK(PlanFromJson(j, "x.json", &back).message() ==
        "x.json: inconsistent plan: slice 0 belongs to no parameter: 'nope.weight'");
  j = PlanToJson(plan);
  j["layers"][6]["partition_dim"] = -1;
  Rehash(&j);
  CHECK(
      PlanFromJson(j, "x.json", &back).message() ==
      "x.json: inconsistent plan: layer 'loss' works on each worker's own records but has partition_dim -1");
  // Found by plan_fuzzer: the job read after the hash check, by a throwing lookup.
  j = PlanToJson(plan);
  j.erase("job");
  Rehash(&j);
  CHECK(PlanFromJson(j, "x.json", &back).message() == "x.json: malformed plan: it has no field 'job'");
  // Found by plan_fuzzer (UBSan): a number no int holds, converted by nlohmann regardless.
  j = PlanToJson(plan);
  j["layers"][1]["partition_dim"] = 2.56e27;
  Rehash(&j);
  CHECK(PlanFromJson(j, "x.json", &back).message() ==
        "'x.json': field 'layers[1].partition_dim' must be an integer in -2147483648..2147483647");
  j = PlanToJson(plan);
  j["slices"][0]["count"] = -1;
  Rehash(&j);
  CHECK(Contains(PlanFromJson(j, "x.json", &back).message(), "'slices[0].count' must be an integer in 0.."));
  j = PlanToJson(plan);
  j["params"][0]["init"]["value"] = 1e300;
  Rehash(&j);
  CHECK(PlanFromJson(j, "x.json", &back).message() ==
        "'x.json': field 'params[0].init.value' must be a number from -3.40282e+38 to 3.40282e+38");
  // A field of the wrong type, or a null where an object belongs, is named, not reported as nlohmann's type
  // error.
  j = PlanToJson(plan);
  j["slices"][0]["param"] = 5;
  Rehash(&j);
  CHECK(PlanFromJson(j, "x.json", &back).message() ==
        "'x.json': field 'slices[0].param' must be a string of 1..4096 bytes");
  j = PlanToJson(plan);
  j["workers"][0] = nullptr;
  Rehash(&j);
  CHECK(PlanFromJson(j, "x.json", &back).message() == "'x.json': field 'workers[0]' must be an object");
  j = PlanToJson(plan);
  j["params"][0]["init"].erase("kind");
  Rehash(&j);
  CHECK(PlanFromJson(j, "x.json", &back).message() == "'x.json': field 'params[0].init.kind' is missing");
}

TEST_CASE("a server's TCP endpoint needs a port others can dial") {
  Plan plan = MakePlan(MlpJob());
  Plan back;
  for (const char* endpoint :
       {"tcp://127.0.0.1:99999", "tcp://127.0.0.1:0", "tcp://127.0.0.1", "tcp://h:x1"}) {
    json j = PlanToJson(plan);
    j["servers"][0]["endpoint"] = endpoint;
    Rehash(&j);
    CHECK(PlanFromJson(j, "x.json", &back).message() == "x.json: inconsistent plan: server 0 has endpoint '" +
                                                            std::string(endpoint) +
                                                            "': its port is not 1 to 65535");
  }
  json j = PlanToJson(plan);
  j["servers"][0]["endpoint"] = "tcp://[::1]:5555";
  Rehash(&j);
  CHECK(PlanFromJson(j, "x.json", &back).ok());
}

}  // namespace
}  // namespace shoal
