// Tests for dl-ckpt's library (lib/ckpt/checkpoint_set, export): merging a
// parameter sliced over servers, the .npz and safetensors bytes (parsed back
// here), choosing the best step and the step to resume from past corruption,
// and filling a net's parameters from a checkpoint (lib/train/evaluate).
#include "ckpt/checkpoint_set.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "ckpt/export.h"
#include "core/file_util.h"
#include "core/hash.h"
#include "core/output.h"
#include "test_util.h"
#include "train/evaluate.h"

namespace shoal {
namespace {

// w [2, 5] cut into floats 0..6 (server 0) and 6..10 (server 1); b [3] whole on server 1.
std::vector<float> Range(float start, int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = start + i;
  return v;
}

Checkpoint ServerCheckpoint(int server, uint64_t step, nlohmann::json metric = nullptr) {
  Checkpoint c;
  c.plan_hash = "00000000000000aa";
  c.server = server;
  c.servers = 2;
  c.step = step;
  c.updates = step * 2;
  c.metric = metric;
  const std::vector<int> w_shape = {2, 5}, b_shape = {3};
  float base = static_cast<float>(step);
  if (server == 0) {
    c.tensors.push_back({"w[0]", "w", "value", 0, 0, w_shape, Range(base, 6)});
    c.tensors.push_back({"w[0]@velocity", "w", "velocity", 0, 0, w_shape, Range(-base, 6)});
  } else {
    c.tensors.push_back({"w[6]", "w", "value", 1, 6, w_shape, Range(base + 6, 4)});
    c.tensors.push_back({"w[6]@velocity", "w", "velocity", 1, 6, w_shape, Range(-base + 6, 4)});
    c.tensors.push_back({"b", "b", "value", 2, 0, b_shape, {0.5f, -0.5f, 1.5f}});
    c.tensors.push_back({"b@velocity", "b", "velocity", 2, 0, b_shape, {0.0f, 0.0f, 0.0f}});
  }
  return c;
}

void WriteSet(const std::string& dir, uint64_t step, nlohmann::json metric = nullptr) {
  for (int s = 0; s < 2; ++s)
    REQUIRE(WriteCheckpoint(CheckpointPath(dir, s, step), ServerCheckpoint(s, step, metric)).ok());
}

TEST_CASE("merge joins a parameter sliced over 2 servers into whole values and velocities") {
  TempDir dir;
  WriteSet(dir.path, 100, {{"step", 100}, {"test_accuracy", 0.5}});
  Checkpoint m;
  std::vector<std::string> files;
  Status s = LoadModel({dir.path}, -1, &m, &files);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(files.size() == 2);
  CHECK(m.server == -1);
  CHECK(m.servers == 2);
  CHECK(m.step == 100);
  CHECK(m.metric["test_accuracy"] == 0.5);
  REQUIRE(m.tensors.size() == 4);
  CHECK(m.tensors[0].name == "w");
  CHECK(m.tensors[0].data == Range(100, 10));
  CHECK(m.tensors[0].shape == std::vector<int>{2, 5});
  CHECK(m.tensors[1].name == "w@velocity");
  std::vector<float> vel = Range(-100, 6);
  for (float x : Range(-94, 4)) vel.push_back(x);
  CHECK(m.tensors[1].data == vel);
  CHECK(m.tensors[2].name == "b");
  CHECK(m.tensors[2].data == std::vector<float>{0.5f, -0.5f, 1.5f});
  CHECK(m.tensors[3].role == "velocity");

  // Written and read back, it is one checkpoint file like any other.
  REQUIRE(WriteCheckpoint(dir.path + "/model.ckpt", m).ok());
  Checkpoint again;
  REQUIRE(LoadModel({dir.path + "/model.ckpt"}, -1, &again, &files).ok());
  CHECK(again.tensors[0].data == m.tensors[0].data);
  CHECK(again.server == -1);
}

TEST_CASE("merge refuses an incomplete set, mixed steps or plans, naming what is wrong") {
  TempDir dir;
  WriteSet(dir.path, 100);
  REQUIRE(WriteCheckpoint(CheckpointPath(dir.path, 0, 200), ServerCheckpoint(0, 200)).ok());
  Checkpoint m;
  Status s = MergeCheckpoints({CheckpointPath(dir.path, 0, 200)}, &m);
  CHECK(s.message() == "step 200 is incomplete: missing server 1 (of 2)");
  s = MergeCheckpoints({CheckpointPath(dir.path, 0, 200), CheckpointPath(dir.path, 1, 100)}, &m);
  CHECK(Contains(s.message(), "server-1-step-0000000100.ckpt' is at step 100"));
  s = MergeCheckpoints({CheckpointPath(dir.path, 0, 100), CheckpointPath(dir.path, 0, 100)}, &m);
  CHECK(Contains(s.message(), "server 0 twice"));
  Checkpoint other = ServerCheckpoint(1, 100);
  other.plan_hash = "00000000000000bb";
  REQUIRE(WriteCheckpoint(dir.path + "/other.ckpt", other).ok());
  s = MergeCheckpoints({CheckpointPath(dir.path, 0, 100), dir.path + "/other.ckpt"}, &m);
  CHECK(Contains(s.message(), "other.ckpt' is of plan 00000000000000bb"));

  // A directory: the newest complete step (100), not the newest (200, incomplete).
  std::vector<std::string> files;
  REQUIRE(ResolveCheckpointSet({dir.path}, -1, &files).ok());
  CHECK(files ==
        std::vector<std::string>{CheckpointPath(dir.path, 0, 100), CheckpointPath(dir.path, 1, 100)});
  s = ResolveCheckpointSet({dir.path}, 200, &files);
  CHECK(s.message() == "'" + dir.path + "': step 200 is not complete: missing server 1");
  s = ResolveCheckpointSet({dir.path}, 300, &files);
  CHECK(Contains(s.message(), "has no checkpoint at step 300"));

  // Without the plan's server count (older files), coverage still catches a gap.
  Checkpoint lone = ServerCheckpoint(1, 7);
  lone.servers = 0;
  REQUIRE(WriteCheckpoint(dir.path + "/lone.ckpt", lone).ok());
  s = MergeCheckpoints({dir.path + "/lone.ckpt"}, &m);
  CHECK(s.message() == "parameter 'w' (value): floats 0..6 are in none of the files (a server missing?)");
}

TEST_CASE("ScanCheckpointDir lists every file and which steps are complete") {
  TempDir dir;
  WriteSet(dir.path, 100);
  REQUIRE(WriteCheckpoint(CheckpointPath(dir.path, 1, 200), ServerCheckpoint(1, 200)).ok());
  std::ofstream(dir.path + "/server-0-step-0000000300.ckpt") << "garbage";
  std::ofstream(dir.path + "/server-0-step-0000000400.ckpt.tmp.1") << "partial";
  CheckpointDir scan;
  REQUIRE(ScanCheckpointDir(dir.path, &scan).ok());
  CHECK(scan.servers == 2);
  CHECK(scan.servers_known);
  REQUIRE(scan.steps.size() == 3);
  CHECK(scan.steps[0].complete());
  CHECK(scan.steps[0].files[1].bytes == std::filesystem::file_size(CheckpointPath(dir.path, 1, 100)));
  CHECK(scan.steps[1].WhyIncomplete() == "missing server 0");
  CHECK(Contains(scan.steps[2].WhyIncomplete(), "is not a shoal checkpoint"));
  CHECK(Contains(scan.steps[2].WhyIncomplete(), "missing server 1"));
  nlohmann::json j = CheckpointDirToJson(scan);
  CHECK(j["checkpoints"].size() == 4);
  CHECK(j["steps"][0]["complete"] == true);
  CHECK(j["steps"][1]["why"] == "missing server 0");
  CHECK(Contains(RenderTable(j), "complete"));
  CHECK(ScanCheckpointDir(dir.path + "/none", &scan).IsInvalidArgument());
}

TEST_CASE("best picks the complete set with the highest test accuracy, ties to the newest") {
  TempDir dir;
  CheckpointDir scan;
  const StepSet* best = nullptr;
  WriteSet(dir.path, 100);
  REQUIRE(ScanCheckpointDir(dir.path, &scan).ok());
  Status s = BestStep(scan, &best);
  CHECK(Contains(s.message(), "records a metric (test_accuracy, or test_loss)"));

  WriteSet(dir.path, 200, {{"step", 200}, {"test_accuracy", 0.8}});
  WriteSet(dir.path, 300, {{"step", 300}, {"test_accuracy", 0.7}});
  WriteSet(dir.path, 400, {{"step", 400}, {"test_accuracy", 0.8}});
  // Step 500 would be best, but server 1's file is missing.
  REQUIRE(
      WriteCheckpoint(CheckpointPath(dir.path, 0, 500), ServerCheckpoint(0, 500, {{"test_accuracy", 0.9}}))
          .ok());
  REQUIRE(ScanCheckpointDir(dir.path, &scan).ok());
  REQUIRE(BestStep(scan, &best).ok());
  CHECK(best->step == 400);
  CHECK(best->metric["test_accuracy"] == 0.8);
}

TEST_CASE("prepare-resume takes the newest verified step, falling back past a corrupted file") {
  TempDir dir, resume;
  WriteSet(dir.path, 100);
  WriteSet(dir.path, 200);
  WriteSet(dir.path, 300);
  // Flip a byte in the last tensor of server 1's newest file.
  std::string bad = CheckpointPath(dir.path, 1, 300), bytes;
  REQUIRE(ReadFile(bad, &bytes).ok());
  bytes[bytes.size() - 2] ^= 0x40;
  std::ofstream(bad, std::ios::binary | std::ios::trunc) << bytes;
  // A leftover of an earlier resume: it must go.
  REQUIRE(WriteCheckpoint(CheckpointPath(resume.path, 0, 100), ServerCheckpoint(0, 100)).ok());

  ResumeChoice choice;
  Status s = PrepareResume(dir.path, resume.path, -1, &choice);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(choice.step == 200);
  CHECK(choice.files ==
        std::vector<std::string>{CheckpointPath(resume.path, 0, 200), CheckpointPath(resume.path, 1, 200)});
  REQUIRE(choice.skipped.size() == 1);
  CHECK(choice.skipped[0]["step"] == 300);
  CHECK(choice.skipped[0]["path"] == bad);
  CHECK(Contains(choice.skipped[0]["reason"], "tensor 'b@velocity' (bytes "));
  std::vector<std::string> there;
  for (const auto& e : std::filesystem::directory_iterator(resume.path))
    there.push_back(e.path().filename().string());
  std::sort(there.begin(), there.end());
  CHECK(there == std::vector<std::string>{"server-0-step-0000000200.ckpt", "server-1-step-0000000200.ckpt"});
  Checkpoint copy;
  REQUIRE(ReadCheckpoint(choice.files[1], &copy).ok());
  CHECK(copy.step == 200);

  // An asked-for step that does not verify is refused, not replaced.
  s = PrepareResume(dir.path, resume.path, 300, &choice);
  CHECK(s.IsCorruption());
  CHECK(Contains(s.message(), "step 300: '" + bad + "': tensor 'b@velocity'"));
  s = PrepareResume(dir.path, dir.path, -1, &choice);
  CHECK(Contains(s.message(), "is the checkpoint directory itself"));
}

}  // namespace
}  // namespace shoal
