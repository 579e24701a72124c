// Tests for lib/train/worker: a standalone worker (its own updater, no
// servers) on a tiny synthetic shard directory trains a tiny job and reports
// through its Output — step, eval and done records with their fields — and
// what SetUp refuses (an id outside the plan, missing or too few shards),
// each error naming what is wrong.
#include "train/worker.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/job.h"
#include "core/output.h"
#include "data/shard_writer.h"
#include "plan/plan.h"
#include "test_util.h"

namespace shoal {
namespace {

using nlohmann::json;

// 12 train records of 2×3 pixels in 3 shards, 4 test records; 4 classes.
Manifest WriteTinyShards(const std::string& dir) {
  ShardSpec spec;
  spec.dataset = "synthetic";
  spec.out_dir = dir;
  spec.shards = 3;
  spec.seed = 9;
  std::vector<uint8_t> pixels, labels;
  for (int r = 0; r < 12; ++r) {
    // Class c lights pixel c brightly: learnable.
    for (int p = 0; p < 6; ++p) pixels.push_back(static_cast<uint8_t>(p == r % 4 ? 250 : 10 + 3 * r));
    labels.push_back(static_cast<uint8_t>(r % 4));
  }
  spec.train_images = IdxArray{{12, 2, 3}, pixels};
  spec.train_labels = IdxArray{{12}, labels};
  spec.test_images = IdxArray{{4, 2, 3}, std::vector<uint8_t>(pixels.begin(), pixels.begin() + 24)};
  spec.test_labels = IdxArray{{4}, std::vector<uint8_t>(labels.begin(), labels.begin() + 4)};
  Manifest m;
  Status s = WriteShards(spec, &m);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return m;
}

// data [1,2,3] → fc 4 → softmax_loss; `train` says how often to report,
// `cluster` how many workers.
std::string TinyJob(const std::string& train = "display_every: 2, eval_every: 3",
                    const std::string& cluster = "nworkers_per_group: 1",
                    const std::string& shape = "[1, 2, 3]") {
  return "model:\n"
         "  layers:\n"
         "    - {name: data, type: data, shape: " +
         shape +
         "}\n"
         "    - {name: fc, type: fully_connected, srclayers: data, num_output: 4}\n"
         "    - {name: loss, type: softmax_loss, srclayers: [fc, data]}\n"
         "train: {batch_size: 2, steps: 50, updater: momentum, learning_rate: 0.1, momentum: 0.9, seed: 3, " +
         train +
         "}\n"
         "cluster: {" +
         cluster + ", consistency: bsp, timeout_ms: 2000}\n";
}

Plan MakeTinyPlan(const std::string& text, int group_size = 1) {
  JobConfig job;
  Status s = ParseJob(text, "tiny.yaml", &job);
  INFO(s.ToString());
  REQUIRE(s.ok());
  Partition partition;
  partition.group_size = group_size;
  PlanOptions options;
  options.endpoints = {"inproc://worker-test-server"};  // never dialled by a standalone worker
  Plan plan;
  s = MakePlan(job, options, partition, &plan);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return plan;
}

// An Output writing JSON lines to a temporary file, read back as records.
struct CapturedOutput {
  std::FILE* file = std::tmpfile();
  Output output{false, file};
  CapturedOutput() { REQUIRE(file != nullptr); }
  ~CapturedOutput() { std::fclose(file); }
  std::vector<json> Records() {
    std::fflush(file);
    std::rewind(file);
    std::vector<json> records;
    std::string line;
    for (int c; (c = std::fgetc(file)) != EOF;) {
      if (c != '\n') {
        line += static_cast<char>(c);
        continue;
      }
      json j = json::parse(line, nullptr, false);
      INFO(line);
      REQUIRE(!j.is_discarded());
      records.push_back(j);
      line.clear();
    }
    CHECK(line.empty());  // every record ends its line
    return records;
  }
};

struct Run {
  Status status;
  WorkerResult result;
  std::vector<json> records;
};

Run RunWorker(const Plan& plan, const WorkerOptions& options) {
  CapturedOutput out;
  Worker worker(plan, options, &out.output);
  Run run;
  run.status = worker.Run(&run.result);
  run.records = out.Records();
  return run;
}

WorkerOptions Standalone(const std::string& shard_dir, int steps = 5) {
  WorkerOptions o;
  o.id = 0;
  o.shard_dir = shard_dir;
  o.standalone = true;
  o.steps = steps;
  return o;
}

TEST_CASE("worker, standalone: trains its steps and records progress, an evaluation and the end") {
  TempDir dir;
  WriteTinyShards(dir.path);
  const Plan plan = MakeTinyPlan(TinyJob());
  const Run run = RunWorker(plan, Standalone(dir.path, 5));
  INFO(run.status.ToString());
  REQUIRE(run.status.ok());

  // display_every 2, eval_every 3, 5 steps: steps 2 and 4, the eval after
  // step 3, the last step 5, then done.
  std::vector<std::string> events;
  for (const auto& r : run.records) events.push_back(r.value("event", "?"));
  REQUIRE(events == std::vector<std::string>{"step", "eval", "step", "step", "done"});

  const long long step_of[] = {2, -1, 4, 5};
  for (int i : {0, 2, 3}) {
    const json& r = run.records[i];
    INFO(r.dump());
    CHECK(r["worker"] == 0);
    CHECK(r["step"] == step_of[i]);
    CHECK(r["steps"] == 5);
    REQUIRE(r["loss"].is_number());
    CHECK(std::isfinite(r["loss"].get<double>()));
    CHECK(r["loss"].get<double>() > 0.0);
    CHECK(r["records_per_s"].get<double>() >= 0.0);
    CHECK(r["elapsed_s"].get<double>() >= 0.0);
    CHECK(r.contains("commit"));
    // Standalone: no parameter traffic, no features between workers.
    const json& bytes = r["bytes_per_step"];
    for (const char* k : {"param_bytes_out", "param_bytes_in", "feature_bytes_in", "feature_bytes_out"}) {
      INFO(k);
      REQUIRE(bytes.contains(k));
      CHECK(bytes[k].get<double>() == 0.0);
    }
  }
  // The loss starts near ln 4 (4 classes, small weights).
  CHECK(run.records[0]["loss"].get<double>() == doctest::Approx(std::log(4.0)).epsilon(0.5));

  const json& eval = run.records[1];
  INFO(eval.dump());
  CHECK(eval["worker"] == 0);
  CHECK(eval["step"] == 3);
  CHECK(eval["test_accuracy"].get<double>() >= 0.0);
  CHECK(eval["test_accuracy"].get<double>() <= 1.0);
  CHECK(std::isfinite(eval["test_loss"].get<double>()));
  CHECK(eval.contains("train_seconds"));

  const json& done = run.records[4];
  INFO(done.dump());
  CHECK(done["worker"] == 0);
  CHECK(done["steps"] == 5);
  CHECK(done["step"] == 5);
  CHECK(done["final_loss"].get<double>() == run.records[3]["loss"].get<double>());
  CHECK(done["test_accuracy"].get<double>() == run.result.test_accuracy);
  CHECK(std::isfinite(done["test_loss"].get<double>()));
  CHECK(done["ms_per_step_median"].get<double>() > 0.0);
  CHECK(done["train_seconds"].get<double>() >= 0.0);
  CHECK(!done.contains("updates_sent"));  // no servers
  CHECK(done.contains("commit"));

  CHECK(run.result.steps == 5);
  CHECK(run.result.final_loss == done["final_loss"].get<double>());
  CHECK(run.result.test_accuracy >= 0.0);
  CHECK(run.result.ms_per_step_median == done["ms_per_step_median"].get<double>());
}

TEST_CASE("worker, standalone: the same plan, shards and seed train the same losses and accuracy") {
  TempDir dir;
  WriteTinyShards(dir.path);
  const Plan plan = MakeTinyPlan(TinyJob());
  const Run a = RunWorker(plan, Standalone(dir.path, 6));
  const Run b = RunWorker(plan, Standalone(dir.path, 6));
  REQUIRE(a.status.ok());
  REQUIRE(b.status.ok());
  REQUIRE(a.records.size() == b.records.size());
  for (size_t i = 0; i < a.records.size(); ++i) {
    INFO("record " << i << ": " << a.records[i].dump() << " / " << b.records[i].dump());
    CHECK(a.records[i]["event"] == b.records[i]["event"]);
    if (a.records[i].contains("loss")) CHECK(a.records[i]["loss"] == b.records[i]["loss"]);
    if (a.records[i].contains("test_accuracy"))
      CHECK(a.records[i]["test_accuracy"] == b.records[i]["test_accuracy"]);
  }
  CHECK(a.result.final_loss == b.result.final_loss);
}

TEST_CASE("worker, standalone: training lowers the loss on learnable records") {
  TempDir dir;
  WriteTinyShards(dir.path);
  const Plan plan = MakeTinyPlan(TinyJob("display_every: 6, eval_every: 0"));
  const Run run = RunWorker(plan, Standalone(dir.path, 60));
  INFO(run.status.ToString());
  REQUIRE(run.status.ok());
  std::vector<double> losses;
  for (const auto& r : run.records)
    if (r["event"] == "step") losses.push_back(r["loss"].get<double>());
  REQUIRE(losses.size() == 10);
  CHECK(losses.back() < 0.5 * losses.front());
  CHECK(run.result.test_accuracy == 1.0);
}

TEST_CASE("worker: without evaluation the done record has no accuracy and the result says -1") {
  TempDir dir;
  WriteTinyShards(dir.path);
  const Plan plan = MakeTinyPlan(TinyJob());
  WorkerOptions o = Standalone(dir.path, 3);
  o.evaluate = false;
  const Run run = RunWorker(plan, o);
  REQUIRE(run.status.ok());
  REQUIRE(!run.records.empty());
  const json& done = run.records.back();
  CHECK(done["event"] == "done");
  CHECK(!done.contains("test_accuracy"));
  for (const auto& r : run.records) CHECK(r["event"] != "eval");
  CHECK(run.result.test_accuracy == -1.0);
}

TEST_CASE("worker: an id outside the plan, or other than 0 standalone, is refused, naming the id") {
  TempDir dir;
  WriteTinyShards(dir.path);
  const Plan plan = MakeTinyPlan(TinyJob());
  WorkerOptions o = Standalone(dir.path);
  o.id = 1;
  Run run = RunWorker(plan, o);
  CHECK(run.status.IsInvalidArgument());
  CHECK(run.status.message() == "worker id 1: a standalone worker trains alone, as worker 0");
  CHECK(run.records.empty());
  o.id = -1;
  run = RunWorker(plan, o);
  CHECK(run.status.message() == "worker id -1: a standalone worker trains alone, as worker 0");

  const Plan four = MakeTinyPlan(TinyJob("display_every: 2", "nworkers_per_group: 4"));
  o.standalone = false;
  o.id = -1;
  run = RunWorker(four, o);
  CHECK(run.status.message() == "worker id -1 is not in the plan (it has 4 workers)");
  o.id = 4;
  run = RunWorker(four, o);
  CHECK(run.status.IsInvalidArgument());
  CHECK(run.status.message() == "worker id 4 is not in the plan (it has 4 workers)");
}

TEST_CASE("worker: missing shards are refused, naming the directory or the file") {
  TempDir dir;
  const Plan plan = MakeTinyPlan(TinyJob());
  // No directory at all.
  Run run = RunWorker(plan, Standalone(""));
  CHECK(run.status.IsInvalidArgument());
  CHECK(run.status.message() == "no shard directory: set data.shards in the job or pass --shards");
  // A directory with no manifest.
  const std::string missing = dir.path + "/nowhere";
  run = RunWorker(plan, Standalone(missing));
  CHECK(!run.status.ok());
  CHECK(Contains(run.status.message(), missing));
  // A manifest whose shard file is gone.
  const Manifest m = WriteTinyShards(dir.path);
  std::filesystem::remove(dir.path + "/" + m.train[1].file);
  run = RunWorker(plan, Standalone(dir.path));
  CHECK(!run.status.ok());
  CHECK(Contains(run.status.message(), m.train[1].file));
  CHECK(run.records.empty());
}

TEST_CASE("worker: too few shards for the plan's workers are refused, saying how many are needed") {
  TempDir dir;
  WriteTinyShards(dir.path);  // 3 shards
  const Plan four = MakeTinyPlan(TinyJob("display_every: 2", "nworkers_per_group: 4"));
  WorkerOptions o;
  o.id = 0;
  o.shard_dir = dir.path;
  const Run run = RunWorker(four, o);
  CHECK(run.status.IsInvalidArgument());
  CHECK(run.status.message() ==
        "'" + dir.path + "' has 3 shards for 4 workers: shard it again with --shards 4");
}

TEST_CASE("worker: shards of another record shape, and a grouped plan run standalone, are refused") {
  TempDir dir;
  WriteTinyShards(dir.path);
  const Plan other = MakeTinyPlan(TinyJob("display_every: 2", "nworkers_per_group: 1", "[1, 3, 2]"));
  Run run = RunWorker(other, Standalone(dir.path));
  CHECK(run.status.IsInvalidArgument());
  CHECK(Contains(run.status.message(), dir.path + "/manifest.json"));
  CHECK(Contains(run.status.message(), "data layer 'data' expects"));

  const Plan grouped = MakeTinyPlan(TinyJob("display_every: 2", "nworkers_per_group: 2"), 2);
  run = RunWorker(grouped, Standalone(dir.path));
  CHECK(run.status.IsInvalidArgument());
  CHECK(run.status.message() == "the plan runs groups of 2 workers: it cannot run standalone");
}

}  // namespace
}  // namespace shoal
