// Tests for lib/config (ParseJob, LoadJobFile and overrides) and the graph
// checks of Net::Build: every refusal names the file, line and column.
#include "config/job.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "graph/net.h"
#include "test_util.h"

namespace shoal {
namespace {

// The smallest complete job; tests splice layers or sections into it.
std::string Job(const std::string& layers, const std::string& rest = "") {
  return "name: tiny\n"
         "model:\n"
         "  layers:\n" +
         layers + rest;
}

const std::string kLayers =
    "    - {name: data, type: data, shape: [1, 2, 2]}\n"                         // line 4
    "    - {name: fc, type: fully_connected, srclayers: data, num_output: 3}\n"  // line 5
    "    - {name: loss, type: softmax_loss, srclayers: [fc, data]}\n";           // line 6

// Parses and builds; returns the first error (or ok).
Status ParseAndBuild(const std::string& text) {
  JobConfig job;
  SHOAL_RETURN_IF_ERROR(ParseJob(text, "job.yaml", &job));
  std::unique_ptr<Net> net;
  return Net::Build(job, &net);
}

TEST_CASE("a valid job parses, with every unset field at its documented default") {
  JobConfig job;
  Status s = ParseJob(Job(kLayers), "job.yaml", &job);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(job.source == "job.yaml");
  CHECK(job.name == "tiny");
  REQUIRE(job.layers.size() == 3);
  CHECK(job.layers[1].name == "fc");
  CHECK(job.layers[1].type == "fully_connected");
  CHECK(job.layers[1].srclayers == std::vector<std::string>{"data"});  // a scalar becomes a list
  CHECK(job.layers[2].srclayers == std::vector<std::string>{"fc", "data"});
  CHECK(job.layers[1].partition_dim == 0);
  CHECK(job.layers[1].location.empty());

  CHECK(job.train.batch_size == 64);
  CHECK(job.train.steps == 0);
  CHECK(job.train.epochs == 1.0);
  CHECK(job.train.updater == UpdateRule::kMomentum);
  CHECK(job.train.learning_rate == 0.05);
  CHECK(job.train.momentum == 0.9);
  CHECK(job.train.weight_decay == 0.0);
  CHECK(job.train.lr_schedule.kind == LrDecay::kConstant);
  CHECK(job.train.lr_schedule.warmup_steps == 0);
  CHECK(!job.train.scale_lr_with_workers);
  CHECK(job.train.beta1 == 0.9);
  CHECK(job.train.beta2 == 0.999);
  CHECK(job.train.rmsprop_alpha == 0.99);
  CHECK(job.train.epsilon == 1e-8);
  CHECK(job.train.display_every == 50);
  CHECK(job.train.seed == 1);
  CHECK(job.train.overlap);
  CHECK(job.train.overlap_bucket_floats == 262144);
  CHECK(job.train.device == "cpu");
  CHECK_FALSE(job.train.cuda);
  CHECK(job.cluster.nworker_groups == 1);
  CHECK(job.cluster.nworkers_per_group == 1);
  CHECK(job.cluster.servers() == 1);
  CHECK(job.cluster.consistency == ConsistencyModel::kBsp);
  CHECK(job.cluster.staleness == 0);
  CHECK(job.cluster.easgd_tau == 1);
  CHECK(job.cluster.easgd_alpha == 0.1);
  CHECK(!job.cluster.easgd_adaptive);
  CHECK(job.cluster.slice_floats == (1 << 20));
  CHECK(job.cluster.timeout_ms == 60000);
  CHECK(job.cluster.wire == ValueEncoding::kF32);
  CHECK(job.data.dataset == "fashion-mnist");
  CHECK(job.data.shards.empty());
  CHECK(job.resolved["model"]["layers"][1]["type"] == "fully_connected");
  CHECK(job.resolved["train"]["batch_size"] == 64);  // defaults resolved, typed

  std::unique_ptr<Net> net;
  CHECK(Net::Build(job, &net).ok());
}

TEST_CASE("explicit sections override the defaults, and sgd means momentum 0") {
  JobConfig job;
  Status s =
      ParseJob(Job(kLayers,
                   "train: {batch_size: 8, steps: 12, updater: sgd, learning_rate: 0.5, overlap: false,\n"
                   "        overlap_bucket_floats: 0,\n"
                   "        lr_schedule: {kind: step, every: 4, gamma: 0.5}}\n"
                   "cluster: {nworker_groups: 2, nworkers_per_group: 3, consistency: async,\n"
                   "          nservers_per_group: 2, slice_floats: 10, timeout_ms: 500, wire: fp16}\n"
                   "data: {dataset: mnist, shards: runs/x}\n"),
               "job.yaml", &job);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(job.train.batch_size == 8);
  CHECK(job.train.steps == 12);
  CHECK(job.train.updater == UpdateRule::kSgd);
  CHECK(job.train.momentum == 0.0);
  CHECK(job.train.lr_schedule.kind == LrDecay::kStep);
  CHECK(job.train.lr_schedule.every == 4);
  CHECK(job.cluster.workers() == 6);
  CHECK(job.cluster.servers() == 2);
  CHECK(job.cluster.consistency == ConsistencyModel::kAsync);
  CHECK(job.cluster.slice_floats == 10);
  CHECK(!job.train.overlap);
  CHECK(job.train.overlap_bucket_floats == 0);
  CHECK(job.cluster.wire == ValueEncoding::kF16);
  CHECK(job.data.dataset == "mnist");
  CHECK(job.data.shards == "runs/x");
}

TEST_CASE("the updaters' fields and the schedule's parse; epsilon defaults to 1e-10 for adagrad only") {
  JobConfig job;
  Status s =
      ParseJob(Job(kLayers,
                   "train: {updater: adam, beta1: 0.8, beta2: 0.99, epsilon: 1e-6, rmsprop_alpha: 0.9,\n"
                   "        scale_lr_with_workers: true,\n"
                   "        lr_schedule: {kind: exponential, gamma: 0.5, warmup_steps: 100}}\n"),
               "job.yaml", &job);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(job.train.updater == UpdateRule::kAdam);
  CHECK(job.train.beta1 == 0.8);
  CHECK(job.train.beta2 == 0.99);
  CHECK(job.train.epsilon == 1e-6);
  CHECK(job.train.rmsprop_alpha == 0.9);
  CHECK(job.train.scale_lr_with_workers);
  CHECK(job.train.lr_schedule.kind == LrDecay::kExponential);
  CHECK(job.train.lr_schedule.every == 1);  // exponential's default: × gamma per update
  CHECK(job.train.lr_schedule.warmup_steps == 100);
  for (const auto& named : kUpdateRules) {
    const UpdateRule rule = named.value;
    const char* updater = named.name;
    INFO(updater);
    REQUIRE(
        ParseJob(Job(kLayers, std::string("train: {updater: ") + updater + "}\n"), "job.yaml", &job).ok());
    CHECK(job.train.updater == rule);
    CHECK(job.train.epsilon == (rule == UpdateRule::kAdagrad ? 1e-10 : 1e-8));
  }
}

TEST_CASE("each updater's state arrays are named once, for the servers, the checkpoints and the planner") {
  const std::vector<std::vector<std::string>> expected = {
      {}, {"velocity"}, {"velocity"}, {"sum_sq"}, {"square_avg"}, {"exp_avg", "exp_avg_sq"}};
  REQUIRE(std::size(kUpdateRules) == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) CHECK(UpdaterStateNames(kUpdateRules[i].value) == expected[i]);
}

TEST_CASE("an unknown updater is refused naming the field, where it is and the known updaters") {
  Status s = ParseAndBuild(Job(kLayers, "train: {updater: adamw}\n"));
  INFO(s.ToString());
  CHECK(s.IsInvalidArgument());
  CHECK(s.message() ==
        "job.yaml:7:18: section 'train': field 'updater' is 'adamw', expected one of: "
        "sgd, momentum, nesterov, adagrad, rmsprop, adam");
}

TEST_CASE("bad updater and schedule fields are refused naming the field and where it is") {
  Status s = ParseAndBuild(Job(kLayers, "train: {updater: adam, beta1: 1.0}\n"));
  CHECK(s.message() == "job.yaml:7:31: section 'train': field 'beta1' must be below 1, got 1.000000");
  s = ParseAndBuild(Job(kLayers, "train: {beta2: -0.5}\n"));
  CHECK(s.message() ==
        "job.yaml:7:16: section 'train': field 'beta2' must be in [0.000000, 1.000000], got -0.500000");
  s = ParseAndBuild(Job(kLayers, "train: {epsilon: 0}\n"));
  CHECK(s.message() == "job.yaml:7:18: section 'train': field 'epsilon' must be greater than 0");
  s = ParseAndBuild(Job(kLayers, "train: {rmsprop_alpha: fast}\n"));
  CHECK(s.message() == "job.yaml:7:24: section 'train': field 'rmsprop_alpha' must be a number");
  s = ParseAndBuild(Job(kLayers, "train: {updater: nesterov, momentum: 0}\n"));
  CHECK(s.message() ==
        "job.yaml:7:38: section 'train': field 'momentum' must be greater than 0 for updater 'nesterov'");
  s = ParseAndBuild(Job(kLayers, "train: {scale_lr_with_workers: maybe}\n"));
  CHECK(s.message() == "job.yaml:7:32: section 'train': field 'scale_lr_with_workers' must be true or false");
  s = ParseAndBuild(Job(kLayers, "train: {lr_schedule: {kind: linear}}\n"));
  CHECK(s.message() ==
        "job.yaml:7:29: section 'train.lr_schedule': field 'kind' is 'linear', expected one of: "
        "constant, step, exponential, cosine");
  s = ParseAndBuild(Job(kLayers, "train: {lr_schedule: {kind: step, gamma: 0.5}}\n"));
  CHECK(s.message() ==
        "job.yaml:7:22: section 'train.lr_schedule': field 'every' must be at least 1 with kind 'step'");
  s = ParseAndBuild(Job(kLayers, "train: {lr_schedule: {kind: exponential, every: 0}}\n"));
  CHECK(s.message() ==
        "job.yaml:7:49: section 'train.lr_schedule': field 'every' must be at least 1 with "
        "kind 'exponential'");
  s = ParseAndBuild(Job(kLayers, "train: {lr_schedule: {warmup_steps: -1}}\n"));
  CHECK(s.message() ==
        "job.yaml:7:37: section 'train.lr_schedule': field 'warmup_steps' must be at least 0, got -1");
}

TEST_CASE("malformed YAML is refused with the file, line and column of the fault") {
  JobConfig job;
  // Line 6: a flow sequence closed by '}' at column 28.
  Status s =
      ParseJob(Job(kLayers.substr(0, kLayers.rfind("    - {name: loss")) + "    - {name: a, type: [relu}\n"),
               "job.yaml", &job);
  INFO(s.ToString());
  CHECK(s.IsInvalidArgument());
  CHECK(s.message() == "job.yaml:6:28: malformed YAML: illegal flow end");

  // Line 3: a key indented less than its section's.
  s = ParseJob("train:\n  steps: 3\n batch_size: 4\n", "other.yaml", &job);
  INFO(s.ToString());
  CHECK(s.message() == "other.yaml:3:2: malformed YAML: end of map not found");
}

TEST_CASE("a mapping value after a plain scalar on the same line is located exactly") {
  JobConfig job;
  Status s = ParseJob("name: tiny\nmodel: layers: 3\n", "job.yaml", &job);
  INFO(s.ToString());
  CHECK(Contains(s.message(), "malformed YAML"));
  CHECK(s.message().rfind("job.yaml:2:14: ", 0) == 0);
}

TEST_CASE("a job that is not a mapping is refused") {
  JobConfig job;
  Status s = ParseJob("- a\n- b\n", "job.yaml", &job);
  CHECK(!s.ok());
  CHECK(Contains(s.message(), "job.yaml: a job file is a mapping"));
}

TEST_CASE("an unknown layer type is refused at Net::Build with its line and the known types") {
  std::string layers = kLayers;
  layers.replace(layers.find("fully_connected"), std::string("fully_connected").size(), "fully_conected");
  JobConfig job;
  REQUIRE(ParseJob(Job(layers), "job.yaml", &job).ok());  // types are the net's business
  std::unique_ptr<Net> net;
  Status s = Net::Build(job, &net);
  INFO(s.ToString());
  CHECK(s.IsInvalidArgument());
  // "    - {name: fc, type: fully_conected": the value starts at column 24.
  CHECK(s.message().rfind("job.yaml:5:24: layer 'fc': field 'type' is 'fully_conected', not a layer type",
                          0) == 0);
  CHECK(Contains(s.message(), "known: data, fully_connected, convolution"));
  CHECK(net == nullptr);
}

TEST_CASE("an unknown field in a layer is refused naming the field and where it is") {
  std::string layers =
      "    - {name: data, type: data, shape: [1, 2, 2]}\n"
      "    - {name: fc, type: fully_connected, srclayers: data, num_output: 3, dropout: 0.5}\n"
      "    - {name: loss, type: softmax_loss, srclayers: [fc, data]}\n";
  Status s = ParseAndBuild(Job(layers));
  INFO(s.ToString());
  CHECK(s.message().rfind("job.yaml:5:73: layer 'fc': unknown field 'dropout'", 0) == 0);
}

TEST_CASE("an unknown field or section in the job is refused naming it") {
  Status s = ParseAndBuild(Job(kLayers, "train:\n  learning_rat: 0.1\n"));
  INFO(s.ToString());
  CHECK(s.message().rfind("job.yaml:8:3: section 'train': unknown field 'learning_rat'", 0) == 0);

  s = ParseAndBuild(Job(kLayers, "trian: {steps: 3}\n"));
  INFO(s.ToString());
  CHECK(s.message().rfind("job.yaml:7:1: job: unknown field 'trian'", 0) == 0);
}

TEST_CASE("a field of the wrong type or out of range is refused naming it") {
  Status s = ParseAndBuild(Job(kLayers, "train: {batch_size: many}\n"));
  CHECK(Contains(s.message(), "job.yaml:7:21: section 'train': field 'batch_size' must be an integer"));
  s = ParseAndBuild(Job(kLayers, "train: {momentum: 1.5}\n"));
  CHECK(Contains(s.message(), "field 'momentum' must be in [0.000000, 1.000000], got 1.500000"));
  s = ParseAndBuild(Job(kLayers, "cluster: {consistency: eventual}\n"));
  CHECK(Contains(s.message(), "field 'consistency' is 'eventual', expected one of: bsp, async, ssp, easgd"));
  s = ParseAndBuild(Job(kLayers, "cluster: {wire: bf16}\n"));
  CHECK(Contains(s.message(), "field 'wire' is 'bf16', expected one of: fp32, fp16"));
  s = ParseAndBuild(Job(kLayers, "train: {overlap: sometimes}\n"));
  CHECK(Contains(s.message(), "field 'overlap'"));
  s = ParseAndBuild(Job(kLayers, "train: {overlap_bucket_floats: -1}\n"));
  CHECK(Contains(s.message(), "field 'overlap_bucket_floats'"));
}

TEST_CASE(
    "train.device: cpu, cuda (each worker a GPU) or cuda:N (all on GPU N); anything else refused naming it") {
  for (auto [written_at, cuda, gpu] : {std::tuple{"cpu", false, -1},
                                       {"cuda", true, -1},
                                       {"cuda:3", true, 3},
                                       {"cuda:12", true, 12},
                                       {"cuda:0", true, 0}}) {
    const char* written = written_at;  // a copy INFO's lambda may capture
    JobConfig job;
    const Status s =
        ParseJob(Job(kLayers, std::string("train: {device: '") + written + "'}\n"), "job.yaml", &job);
    INFO(written << ": " << s.ToString());
    REQUIRE(s.ok());
    CHECK(job.train.device == written);
    CHECK(job.train.cuda == cuda);
    CHECK(job.train.gpu == gpu);
    CHECK(job.resolved["train"]["device"] == written);
  }
  for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "cuda:100", "CUDA", "cuda:0 "}) {
    JobConfig job;
    const Status s =
        ParseJob(Job(kLayers, std::string("train: {device: '") + bad + "'}\n"), "job.yaml", &job);
    INFO(bad);
    CHECK(Contains(s.message(), "job.yaml:7:"));
    CHECK(
        Contains(s.message(), "field 'device' is '" + std::string(bad) + "'; expected cpu, cuda or cuda:N"));
  }
}

TEST_CASE("train.compute: fp32 (the default) or bf16 on the CPU; a GPU's is fp32") {
  JobConfig job;
  REQUIRE(ParseJob(Job(kLayers, "train: {}\n"), "job.yaml", &job).ok());
  CHECK(job.train.compute == Precision::kFp32);
  CHECK(job.resolved["train"]["compute"] == "fp32");
  REQUIRE(ParseJob(Job(kLayers, "train: {compute: bf16}\n"), "job.yaml", &job).ok());
  CHECK(job.train.compute == Precision::kBf16);
  CHECK(job.resolved["train"]["compute"] == "bf16");
  Status s = ParseJob(Job(kLayers, "train: {compute: fp16}\n"), "job.yaml", &job);
  CHECK(Contains(s.message(), "field 'compute'"));
  CHECK(Contains(s.message(), "fp16"));
  s = ParseJob(Job(kLayers, "train: {compute: bf16, device: 'cuda:1'}\n"), "job.yaml", &job);
  CHECK(Contains(s.message(), "field 'compute' is bf16, which runs on the CPU's oneDNN kernels"));
  CHECK(Contains(s.message(), "train.device 'cuda:1'"));
}

TEST_CASE("a section that is not a mapping is refused, not thrown") {
  for (const char* rest : {"train: 5\n", "cluster: [1, 2]\n", "data: fashion\n"}) {
    INFO(rest);
    Status s;
    CHECK_NOTHROW(s = ParseAndBuild(Job(kLayers, rest)));
    CHECK(s.IsInvalidArgument());
    CHECK(Contains(s.message(), "job.yaml:7:"));
    CHECK(Contains(s.message(), "must be a mapping"));
  }
  Status s;
  CHECK_NOTHROW(s = ParseAndBuild("model: 3\n"));
  CHECK(s.message() == "job.yaml:1:8: section 'model' must be a mapping");
  CHECK_NOTHROW(s = ParseAndBuild(Job(kLayers, "train: {lr_schedule: step}\n")));
  CHECK(s.message() == "job.yaml:7:22: section 'train.lr_schedule' must be a mapping");
}

TEST_CASE("a convolution after a fully_connected layer is refused naming both layers") {
  std::string layers =
      "    - {name: data, type: data, shape: [1, 4, 4]}\n"
      "    - {name: fc1, type: fully_connected, srclayers: data, num_output: 8}\n"
      "    - {name: conv1, type: convolution, srclayers: fc1, num_output: 2, kernel: 3}\n"
      "    - {name: loss, type: softmax_loss, srclayers: [conv1, data]}\n";
  Status s = ParseAndBuild(Job(layers));
  INFO(s.ToString());
  CHECK(s.message().rfind("job.yaml:6:7: layer 'conv1': needs a [channels, height, width] source; "
                          "'fc1' gives [8]",
                          0) == 0);
}

TEST_CASE("a kernel larger than the source is refused naming the field") {
  std::string layers =
      "    - {name: data, type: data, shape: [1, 2, 2]}\n"
      "    - {name: conv, type: convolution, srclayers: data, num_output: 2, kernel: 3}\n"
      "    - {name: loss, type: softmax_loss, srclayers: [conv, data]}\n";
  Status s = ParseAndBuild(Job(layers));
  INFO(s.ToString());
  CHECK(Contains(s.message(), "layer 'conv': field 'kernel' is larger than the padded source"));
}

TEST_CASE("missing sections and fields are refused naming what is missing") {
  Status s = ParseAndBuild("name: tiny\ntrain: {steps: 3}\n");
  CHECK(Contains(s.message(), "job.yaml:1:1: job: missing section 'model'"));
  s = ParseAndBuild("model: {}\n");
  CHECK(Contains(s.message(), "section 'model': missing field 'layers'"));
  s = ParseAndBuild("model:\n  layers: []\n");
  CHECK(Contains(s.message(), "job.yaml:2:11: section 'model': field 'layers' must be a non-empty list"));
  s = ParseAndBuild(Job("    - {type: relu}\n"));
  CHECK(Contains(s.message(), "job.yaml:4:7: layer: missing field 'name'"));
  s = ParseAndBuild(Job("    - {name: r}\n"));
  CHECK(Contains(s.message(), "layer 'r': missing field 'type'"));
  s =
      ParseAndBuild(Job("    - {name: data, type: data, shape: [1, 2, 2]}\n"
                        "    - {name: fc, type: fully_connected, srclayers: data}\n"));
  CHECK(Contains(s.message(), "job.yaml:5:7: layer 'fc': missing field 'num_output'"));
  s =
      ParseAndBuild(Job("    - {name: data, type: data, shape: [4]}\n"
                        "    - {name: fc, type: fully_connected, srclayers: data, num_output: 2}\n"));
  CHECK(s.message() == "job.yaml: the model has no loss layer (type 'softmax_loss' or 'rbm')");
  s = ParseAndBuild(Job("    - {name: fc, type: relu}\n"));
  CHECK(Contains(s.message(), "layer 'fc': needs exactly one source layer"));
}

TEST_CASE("srclayers naming an unknown layer is refused naming it and where") {
  std::string layers = kLayers;
  layers.replace(layers.find("srclayers: data"), 15, "srclayers: dta");
  Status s = ParseAndBuild(Job(layers));
  INFO(s.ToString());
  CHECK(s.message().rfind("job.yaml:5:52: layer 'fc': field 'srclayers' names unknown layer 'dta'", 0) == 0);
}

TEST_CASE("a cycle in srclayers is refused") {
  std::string layers =
      "    - {name: data, type: data, shape: [4]}\n"
      "    - {name: a, type: relu, srclayers: b}\n"
      "    - {name: b, type: relu, srclayers: a}\n"
      "    - {name: loss, type: softmax_loss, srclayers: [b, data]}\n";
  Status s = ParseAndBuild(Job(layers));
  INFO(s.ToString());
  CHECK(s.message().rfind("job.yaml:5:40: layer 'a': field 'srclayers' is part of a cycle", 0) == 0);

  s = ParseAndBuild(Job("    - {name: a, type: relu, srclayers: a}\n"));
  CHECK(Contains(s.message(), "layer 'a': field 'srclayers' names the layer itself"));
}

TEST_CASE("a layer name used twice is refused at its second use") {
  std::string layers = kLayers + "    - {name: fc, type: relu, srclayers: data}\n";
  Status s = ParseAndBuild(Job(layers));
  INFO(s.ToString());
  CHECK(s.message() == "job.yaml:7:7: layer name 'fc' is used twice");
}

TEST_CASE("a layer name that is not plain (a path, a space, a quote) is refused where it is written") {
  for (const char* bad : {"../x", "fc 1", "fc/w", "'q'"}) {
    const std::string layers = kLayers + "    - {name: \"" + bad + "\", type: relu, srclayers: data}\n";
    Status s = ParseAndBuild(Job(layers));
    INFO(s.ToString());
    CHECK(Contains(s.message(), "job.yaml:7:"));
    CHECK(Contains(s.message(), "must be 1 to 128 of A-Z a-z 0-9 _ . - (it names the layer's parameters"));
  }
}

TEST_CASE("two data layers or two loss layers are refused") {
  Status s = ParseAndBuild(Job(kLayers + "    - {name: data2, type: data, shape: [3]}\n"));
  CHECK(Contains(s.message(), "layer 'data2': a net has one data layer; 'data' is the first"));
  s = ParseAndBuild(Job(kLayers + "    - {name: loss2, type: softmax_loss, srclayers: [fc, data]}\n"));
  CHECK(Contains(s.message(), "layer 'loss2': a net has one loss layer; 'loss' is the first"));
}

TEST_CASE("bsp with several worker groups is refused; async, ssp and easgd allow it") {
  Status s = ParseAndBuild(Job(kLayers, "cluster:\n  nworker_groups: 2\n"));
  INFO(s.ToString());
  CHECK(s.message().rfind("job.yaml:8:19: section 'cluster': field 'nworker_groups' must be 1 with "
                          "consistency 'bsp'",
                          0) == 0);
  CHECK(ParseAndBuild(Job(kLayers, "cluster: {nworker_groups: 2, consistency: async}\n")).ok());
  CHECK(ParseAndBuild(Job(kLayers, "cluster: {nworker_groups: 2, consistency: ssp, staleness: 1}\n")).ok());
  CHECK(ParseAndBuild(Job(kLayers, "cluster: {nworker_groups: 2, consistency: easgd}\n")).ok());
  s = ParseAndBuild(Job(kLayers, "cluster: {nserver_groups: 2}\n"));
  CHECK(Contains(s.message(), "field 'nserver_groups' must be 1"));
}

TEST_CASE("ssp takes a staleness of at least 0, and needs one") {
  JobConfig job;
  Status s = ParseJob(Job(kLayers, "cluster: {consistency: ssp, staleness: 3}\n"), "job.yaml", &job);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(job.cluster.consistency == ConsistencyModel::kSsp);
  CHECK(job.cluster.staleness == 3);
  REQUIRE(ParseJob(Job(kLayers, "cluster: {consistency: ssp, staleness: 0}\n"), "job.yaml", &job).ok());
  CHECK(job.cluster.staleness == 0);

  s = ParseAndBuild(Job(kLayers, "cluster: {consistency: ssp}\n"));
  CHECK(s.message() ==
        "job.yaml:7:10: section 'cluster': consistency 'ssp' needs field 'staleness' (the slack "
        "s >= 0: a worker about to train step t sees every update of steps up to t-1-s)");
  s = ParseAndBuild(Job(kLayers, "cluster: {consistency: ssp, staleness: -1}\n"));
  CHECK(s.message() == "job.yaml:7:40: section 'cluster': field 'staleness' must be at least 0, got -1");
}

TEST_CASE("a consistency model's fields are refused under another model, naming where") {
  Status s = ParseAndBuild(Job(kLayers, "cluster:\n  staleness: 2\n"));
  CHECK(s.message() ==
        "job.yaml:8:14: section 'cluster': field 'staleness' applies only with consistency "
        "'ssp', not with consistency 'bsp'");
  s = ParseAndBuild(Job(kLayers, "cluster: {consistency: async, easgd_alpha: 0.2}\n"));
  CHECK(s.message() ==
        "job.yaml:7:44: section 'cluster': field 'easgd_alpha' applies only with consistency "
        "'easgd', not with consistency 'async'");
  for (const char* key : {"easgd_tau: 2", "easgd_adaptive: true", "easgd_loss_threshold: 3"}) {
    INFO(key);
    s = ParseAndBuild(Job(kLayers, std::string("cluster: {consistency: ssp, staleness: 1, ") + key + "}\n"));
    CHECK(Contains(s.message(), "applies only with consistency 'easgd', not with consistency 'ssp'"));
  }
}

TEST_CASE("easgd: tau of at least 1, alpha strictly inside (0, 1)") {
  JobConfig job;
  Status s = ParseJob(Job(kLayers, "cluster: {consistency: easgd, easgd_tau: 8, easgd_alpha: 0.3}\n"),
                      "job.yaml", &job);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(job.cluster.consistency == ConsistencyModel::kEasgd);
  CHECK(job.cluster.easgd_tau == 8);
  CHECK(job.cluster.easgd_alpha == 0.3);
  CHECK(!job.cluster.easgd_adaptive);

  s = ParseAndBuild(Job(kLayers, "cluster: {consistency: easgd, easgd_tau: 0}\n"));
  CHECK(s.message() == "job.yaml:7:42: section 'cluster': field 'easgd_tau' must be at least 1, got 0");
  for (const char* alpha : {"0", "1", "1.0", "-0.5"}) {
    INFO(alpha);
    s = ParseAndBuild(
        Job(kLayers, std::string("cluster: {consistency: easgd, easgd_alpha: ") + alpha + "}\n"));
    CHECK(Contains(s.message(), "job.yaml:7:44: section 'cluster': field 'easgd_alpha' must"));
  }
  s = ParseAndBuild(Job(kLayers, "cluster: {consistency: easgd, easgd_alpha: 1}\n"));
  CHECK(Contains(s.message(), "field 'easgd_alpha' must be strictly between 0 and 1, got 1.000000"));
  s = ParseAndBuild(Job(kLayers, "cluster: {consistency: easgd, easgd_loss_threshold: 4}\n"));
  CHECK(Contains(s.message(), "field 'easgd_loss_threshold' applies only with easgd_adaptive: true"));
}

TEST_CASE("easgd_adaptive exchanges by loss: it needs a positive threshold and refuses a period") {
  JobConfig job;
  Status s = ParseJob(
      Job(kLayers, "cluster: {consistency: easgd, easgd_adaptive: true, easgd_loss_threshold: 2.5}\n"),
      "job.yaml", &job);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(job.cluster.easgd_adaptive);
  CHECK(job.cluster.easgd_loss_threshold == 2.5);

  s = ParseAndBuild(Job(kLayers, "cluster: {consistency: easgd, easgd_adaptive: true}\n"));
  CHECK(s.message() ==
        "job.yaml:7:10: section 'cluster': easgd_adaptive: true needs field "
        "'easgd_loss_threshold' (DeepSpark's L_cut: a worker exchanges when its loss summed since "
        "the last exchange passes it)");
  s = ParseAndBuild(
      Job(kLayers, "cluster: {consistency: easgd, easgd_adaptive: true, easgd_loss_threshold: 0}\n"));
  CHECK(Contains(s.message(), "field 'easgd_loss_threshold' must be greater than 0"));
  s = ParseAndBuild(
      Job(kLayers,
          "cluster: {consistency: easgd, easgd_adaptive: true, easgd_loss_threshold: 1, easgd_tau: 4}\n"));
  CHECK(Contains(s.message(), "field 'easgd_tau' is not used with easgd_adaptive: true"));
}

TEST_CASE("LoadJobFile applies section.field=value overrides before validating") {
  TempDir dir;
  const std::string path = dir.path + "/job.yaml";
  std::ofstream(path) << Job(kLayers, "train:\n  steps: 2\ncluster:\n  nworkers_per_group: 1\n");
  JobConfig job;
  Status s = LoadJobFile(path, {"train.steps=7", "cluster.nworkers_per_group=3", "data.shards=runs/y"}, &job);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(job.source == path);
  CHECK(job.train.steps == 7);
  CHECK(job.cluster.nworkers_per_group == 3);
  CHECK(job.data.shards == "runs/y");  // creates a section the file did not have
  // The plan embeds the job after overrides.
  CHECK(job.resolved["train"]["steps"] == 7);

  REQUIRE(LoadJobFile(path, {}, &job).ok());
  CHECK(job.train.steps == 2);
}

TEST_CASE("bad overrides are refused naming them") {
  TempDir dir;
  const std::string path = dir.path + "/job.yaml";
  std::ofstream(path) << Job(kLayers);
  JobConfig job;
  Status s = LoadJobFile(path, {"nonsense"}, &job);
  CHECK(s.IsInvalidArgument());
  CHECK(s.message() == "override 'nonsense' is not of the form section.field=value");
  s = LoadJobFile(path, {"=3"}, &job);
  CHECK(Contains(s.message(), "override '=3' is not of the form"));
  s = LoadJobFile(path, {"train..steps=3"}, &job);
  CHECK(Contains(s.message(), "override 'train..steps=3' has an empty field name"));
  s = LoadJobFile(path, {"name.x=3"}, &job);
  CHECK(Contains(s.message(), "'name' is not a section"));
  // An override of a misspelled field is as unknown as a misspelled field.
  s = LoadJobFile(path, {"train.stepz=3"}, &job);
  CHECK(Contains(s.message(), "section 'train': unknown field 'stepz'"));
  // A value of the wrong type is caught by the same checks as the file's.
  s = LoadJobFile(path, {"train.steps=lots"}, &job);
  CHECK(Contains(s.message(), "field 'steps' must be an integer"));
}

TEST_CASE("a missing job file is an I/O error naming it") {
  JobConfig job;
  Status s = LoadJobFile("/nonexistent/shoal/job.yaml", {}, &job);
  CHECK(s.IsIOError());
  CHECK(Contains(s.message(), "'/nonexistent/shoal/job.yaml'"));
}

}  // namespace
}  // namespace shoal
