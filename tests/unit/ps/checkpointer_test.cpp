// Tests for lib/ps/checkpointer: what a server's checkpoint holds, and a
// server resumed from one.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ckpt/checkpoint.h"
#include "comm/half.h"
#include "core/hash.h"
#include "server_fixture.h"
#include "test_util.h"

namespace shoal {
namespace {

TEST_CASE("a server resumed from a checkpoint serves its values and version; another plan's is refused") {
  const std::string dir = TempDirPath();
  ServerFixture f("bsp", dir);
  auto worker0 = Connect(f), worker1 = Connect(f);
  Reply reply;
  REQUIRE(Update(worker0.get(), f, 0, 0, MakeGrads(0, 0), &reply).ok());
  REQUIRE(Update(worker1.get(), f, 0, 1, MakeGrads(1, 0), &reply).ok());
  REQUIRE(worker0->Call(f.Header(MsgType::kGet, 1, 0), {}, &reply).ok());
  const std::vector<float> trained = EntryValues(reply, 0);
  REQUIRE(f.Stop().ok());

  // The same plan, restarted from the checkpoint: a joining worker gets the
  // trained values and goes on at step 1.
  {
    ResumedServer again(f, dir);
    REQUIRE(Connect(f)->Call(f.Header(MsgType::kJoin, 0, 1), {}, &reply).ok());
    CHECK(reply.view().header.step == 1);
    CheckValues(EntryValues(reply, 0), trained);
    again.Stop();
  }
  ServerOptions resume;
  resume.resume_dir = dir;

  // Another plan (another endpoint, so another hash) refuses the checkpoint.
  JobConfig job;
  REQUIRE(ParseJob(TinyJob("bsp"), "tiny.yaml", &job).ok());
  PlanOptions options;
  options.endpoints = {UniqueEndpoint()};
  Plan other_plan;
  REQUIRE(MakeDataParallelPlan(job, options, &other_plan).ok());
  ParameterServer other(other_plan, resume);
  Status s = other.Start();
  CHECK(Contains(s.message(), "belongs to plan " + f.plan.hash));
  std::filesystem::remove_all(dir);
}

const CheckpointTensor* FindTensor(const Checkpoint& ckpt, const std::string& name) {
  for (const auto& t : ckpt.tensors)
    if (t.name == name) return &t;
  FAIL("the checkpoint has no tensor '" << name << "'");
  return nullptr;
}

TEST_CASE("adam: a checkpoint holds both of its buffers, and a resumed server goes on as if it never stopped") {
  const std::string dir = TempDirPath();
  ServerFixture f("bsp", dir, "updater: adam");
  const std::vector<float> w1 = TrainStep(f, 0, 0);
  REQUIRE(f.Stop().ok());

  // What the server should hold: the same rule applied here to fc.weight.
  const UpdaterConfig adam = UpdaterFromTrain(f.plan.job.train, 2);
  REQUIRE(adam.rule == UpdateRule::kAdam);
  std::vector<float> w = f.Initial(0);
  UpdaterState state = NewUpdaterState(adam, w.size());
  ApplyUpdate(adam, 0, w.size(), MeanGrads(0, 0).data(), w.data(), &state);
  CheckValues(w1, w);

  Checkpoint ckpt;
  REQUIRE(ReadCheckpoint(ListCheckpoints(dir, 0).back(), &ckpt).ok());
  REQUIRE(ckpt.tensors.size() == 6);  // value, exp_avg and exp_avg_sq of each slice
  const CheckpointTensor* m = FindTensor(ckpt, "fc.weight@exp_avg");
  const CheckpointTensor* u = FindTensor(ckpt, "fc.weight@exp_avg_sq");
  REQUIRE((m && u));
  CHECK(m->role == "exp_avg");
  CHECK(u->role == "exp_avg_sq");
  CHECK(m->param == "fc.weight");
  CheckValues(m->data, state[0]);
  CheckValues(u->data, state[1]);
  CHECK(FindTensor(ckpt, "fc.bias@exp_avg_sq") != nullptr);

  // Resumed, step 1 continues from both buffers (and bias-corrects as Adam's step 2).
  ResumedServer again(f, dir);
  const std::vector<float> w2 = TrainStep(f, 1, 0);
  again.Stop();
  std::vector<float> fresh = w;  // what forgetting the buffers would give
  UpdaterState zeros = NewUpdaterState(adam, w.size());
  ApplyUpdate(adam, 1, w.size(), MeanGrads(0, 1).data(), fresh.data(), &zeros);
  ApplyUpdate(adam, 1, w.size(), MeanGrads(0, 1).data(), w.data(), &state);
  CheckValues(w2, w);
  CHECK(std::fabs(fresh[0] - w[0]) > 1e-3f);  // so the comparison above tells them apart
  std::filesystem::remove_all(dir);
}

TEST_CASE("resume refuses a checkpoint without one of its updater's buffers, with another's, or with one twice") {
  const std::string dir = TempDirPath(), edited = TempDirPath();
  ServerFixture f("bsp", dir, "updater: adam");
  TrainStep(f, 0, 0);
  REQUIRE(f.Stop().ok());
  Checkpoint good;
  REQUIRE(ReadCheckpoint(ListCheckpoints(dir, 0).back(), &good).ok());
  const std::string path = CheckpointPath(edited, 0, good.step);
  auto resume_from = [&](const Checkpoint& ckpt) {
    REQUIRE(WriteCheckpoint(path, ckpt).ok());
    ServerOptions options;
    options.resume_dir = edited;
    ParameterServer server(f.plan, options);
    return server.Start();
  };
  REQUIRE(resume_from(good).ok());

  Checkpoint missing = good;
  missing.tensors.pop_back();  // fc.bias@exp_avg_sq
  Status s = resume_from(missing);
  CHECK(s.message() == "'" + path + "' holds 5 tensors, this server needs 6 (the value and the state of each "
                                    "slice: exp_avg, exp_avg_sq)");

  Checkpoint other = good;
  other.tensors.back().role = "velocity";
  other.tensors.back().name = "fc.bias@velocity";
  s = resume_from(other);
  CHECK(s.message() == "'" + path + "': tensor 'fc.bias@velocity' is state 'velocity', which updater 'adam' "
                                    "does not keep (exp_avg, exp_avg_sq)");

  Checkpoint twice = good;
  twice.tensors.back() = twice.tensors[twice.tensors.size() - 2];  // fc.bias@exp_avg in place of exp_avg_sq
  s = resume_from(twice);
  CHECK(s.message() == "'" + path + "': tensor 'fc.bias@exp_avg' is there twice");
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(edited);
}

}  // namespace
}  // namespace shoal
