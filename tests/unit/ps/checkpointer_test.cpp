// Tests for lib/ps/checkpointer: what a server's checkpoint holds, and a
// server resumed from one.
#include "ps/checkpointer.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ckpt/checkpoint.h"
#include "ckpt/checkpoint_check.h"
#include "comm/half.h"
#include "core/hash.h"
#include "server_fixture.h"
#include "test_util.h"

namespace shoal {
namespace {

TEST_CASE(
    "a server resumed from a checkpoint serves its values and version, and counts the steps it holds; "
    "another plan's is refused") {
  const std::string dir = TempDirPath();
  ServerFixture f("bsp", dir);
  auto worker0 = Connect(f), worker1 = Connect(f);
  Reply reply;
  REQUIRE(Update(worker0.get(), f, 0, 0, MakeGrads(0, 0), &reply).ok());
  REQUIRE(Update(worker1.get(), f, 0, 1, MakeGrads(1, 0), &reply).ok());
  REQUIRE(worker0->Call(f.Header(MsgType::kGet, 1, 0), {}, &reply).ok());
  const std::vector<float> trained = EntryValues(reply, 0);
  CHECK(f.server->stats().updates_from == std::vector<uint64_t>{1, 1});
  CHECK(f.server->stats().steps_from == std::vector<uint64_t>{1, 1});
  REQUIRE(f.Stop().ok());

  // The same plan, restarted from the checkpoint: a joining worker gets the
  // trained values and goes on at step 1.
  {
    ResumedServer again(f, dir);
    REQUIRE(Connect(f)->Call(f.Header(MsgType::kJoin, kJoinWhereTheServerIs, 1), {}, &reply).ok());
    CHECK(reply.view().header.step == 1);
    CheckValues(EntryValues(reply, 0), trained);
    // It has taken in no step since it started, and holds each worker's first.
    CHECK(again.stats().updates_from == std::vector<uint64_t>{0, 0});
    CHECK(again.stats().steps_from == std::vector<uint64_t>{1, 1});
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

TEST_CASE(
    "adam: a checkpoint holds both of its buffers, and a resumed server goes on as if it never stopped") {
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

TEST_CASE(
    "resume refuses a checkpoint without one of its updater's buffers, with another's, or with one twice") {
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
  CHECK(s.message() == "'" + path +
                           "' holds 5 tensors, this server needs 6 (the value and the state of each "
                           "slice: exp_avg, exp_avg_sq)");

  Checkpoint other = good;
  other.tensors.back().role = "velocity";
  other.tensors.back().name = "fc.bias@velocity";
  s = resume_from(other);
  CHECK(s.message() == "'" + path +
                           "': tensor 'fc.bias@velocity' is state 'velocity', which updater 'adam' "
                           "does not keep (exp_avg, exp_avg_sq)");

  Checkpoint twice = good;
  twice.tensors.back() = twice.tensors[twice.tensors.size() - 2];  // fc.bias@exp_avg in place of exp_avg_sq
  s = resume_from(twice);
  CHECK(s.message() == "'" + path + "': tensor 'fc.bias@exp_avg' is there twice");
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(edited);
}

// A server's table as the one-layer job makes it, for the checkpointer alone.
struct TableOnly {
  Plan plan;
  ServerConfig config;
  std::unique_ptr<ServerTable> table;
  explicit TableOnly(const std::string& consistency = "bsp") {
    JobConfig job;
    REQUIRE(ParseJob(TinyJob(consistency), "tiny.yaml", &job).ok());
    PlanOptions options;
    options.endpoints = {"inproc://checkpointer-test"};
    REQUIRE(MakeDataParallelPlan(job, options, &plan).ok());
    REQUIRE(MakeServerConfig(plan, 0, &config).ok());
    table = std::make_unique<ServerTable>(config, true);
  }
};

TEST_CASE("a snapshot restores into a fresh table: values, the updater's state, versions and clocks") {
  TableOnly a;
  for (auto& [key, s] : a.table->slices()) {
    for (size_t i = 0; i < s.value.size(); ++i) s.value[i] = key + 0.5f * i, s.state[0][i] = -1.0f * i;
  }
  for (auto& layer : a.table->layers()) layer.version = 4, layer.updates_from = {4, 3};
  for (int i = 0; i < 4; ++i) a.table->Advance();
  const Checkpoint ckpt = SnapshotTable(*a.table, 9, {{"test_accuracy", 0.5}});
  CHECK(ckpt.step == 4);
  CHECK(ckpt.updates == 9);
  CHECK(ckpt.updates_from == std::vector<uint64_t>{4, 3});
  CHECK(ckpt.tensors.size() == 4);  // 2 slices × (value, velocity)
  CHECK(ckpt.metric["test_accuracy"] == 0.5);
  TableOnly b;
  REQUIRE(RestoreTable(ckpt, "x.ckpt", b.table.get()).ok());
  CHECK(b.table->version() == 4);
  CHECK(b.table->NextStepOf(1) == 3);
  for (const auto& [key, s] : a.table->slices()) {
    CHECK(b.table->slice(key).value == s.value);
    CHECK(b.table->slice(key).state == s.state);
  }
}

TEST_CASE("a snapshot taken into the written one's spare buffers equals a fresh one and keeps them") {
  TempDir dir;
  TableOnly t;
  Checkpointer checkpointer(dir.path + "/ckpt", 0, 2, 3, "");
  REQUIRE(checkpointer.Start().ok());
  CHECK(checkpointer.TakeSpare().tensors.empty());  // nothing written yet
  t.table->Advance();
  checkpointer.Write(SnapshotTable(*t.table, 1, nullptr));
  REQUIRE(checkpointer.Flush().ok());
  Checkpoint spare = checkpointer.TakeSpare();
  REQUIRE(spare.tensors.size() == 4);
  CHECK(spare.step == 1);
  CHECK(checkpointer.TakeSpare().tensors.empty());  // handed out once
  std::vector<const float*> buffers;
  for (const CheckpointTensor& tensor : spare.tensors) buffers.push_back(tensor.data.data());

  for (auto& [key, s] : t.table->slices())
    for (size_t i = 0; i < s.value.size(); ++i) s.value[i] = key - 0.25f * i, s.state[0][i] = 2.0f * i;
  t.table->Advance();
  const Checkpoint reused = SnapshotTable(*t.table, 2, {{"test_loss", 0.5}}, std::move(spare));
  const Checkpoint fresh = SnapshotTable(*t.table, 2, {{"test_loss", 0.5}});
  CHECK(reused.step == 2);
  CheckSameCheckpoint(reused, fresh);
  for (size_t i = 0; i < reused.tensors.size(); ++i) CHECK(reused.tensors[i].data.data() == buffers[i]);

  // Whatever the reused one held, more tensors or fewer, nothing of it stays.
  for (size_t tensors : {9, 1}) {
    Checkpoint junk;
    junk.plan_hash = "junk";
    junk.server = junk.servers = 7;
    junk.step = junk.updates = 99;
    junk.updates_from = {5, 6, 7};
    junk.metric = {{"junk", 1}};
    for (size_t i = 0; i < tensors; ++i)
      junk.tensors.push_back({"name of junk " + std::to_string(i),
                              "junk",
                              "junk",
                              77,
                              12345,
                              {3, 3},
                              std::vector<float>(3 + i, -1.0f)});
    CheckSameCheckpoint(SnapshotTable(*t.table, 2, {{"test_loss", 0.5}}, std::move(junk)), fresh);
  }
}

TEST_CASE("the checkpointer writes on its own thread, Flush waits for the disk, and the newest `keep` stay") {
  TempDir dir;
  TableOnly t;
  Checkpointer checkpointer(dir.path + "/ckpt", 0, 2, 3, "");
  REQUIRE(checkpointer.Start().ok());
  for (int step = 1; step <= 4; ++step) {
    t.table->Advance();
    checkpointer.Write(SnapshotTable(*t.table, step, nullptr));
  }
  CHECK(checkpointer.Flush().ok());
  CHECK(checkpointer.written() == 4);
  const std::vector<std::string> kept = ListCheckpoints(dir.path + "/ckpt", 0);
  REQUIRE(kept.size() == 2);
  CHECK(kept[1] == CheckpointPath(dir.path + "/ckpt", 0, 4));
  Checkpoint back;
  REQUIRE(ReadCheckpoint(kept[1], &back).ok());
  CHECK(back.step == 4);
}

TEST_CASE("the rotation is the plan's own: another plan's checkpoints, even of later steps, are left alone") {
  TempDir dir;
  TableOnly t;
  const std::string ckpt_dir = dir.path + "/ckpt";
  std::filesystem::create_directories(ckpt_dir);
  Checkpoint foreign = SnapshotTable(*t.table, 0, nullptr);
  foreign.plan_hash = "00000000000000ff";
  for (uint64_t step : {10, 15, 20}) {
    foreign.step = step;
    REQUIRE(WriteCheckpoint(CheckpointPath(ckpt_dir, 0, step), foreign).ok());
  }
  Checkpointer checkpointer(ckpt_dir, 0, 2, 3, "");
  REQUIRE(checkpointer.Start().ok());
  for (int step = 1; step <= 4; ++step) {
    t.table->Advance();
    checkpointer.Write(SnapshotTable(*t.table, step, nullptr));
    CHECK(checkpointer.Flush().ok());
  }
  CHECK(ListCheckpoints(ckpt_dir, 0) ==
        std::vector<std::string>{CheckpointPath(ckpt_dir, 0, 3), CheckpointPath(ckpt_dir, 0, 4),
                                 CheckpointPath(ckpt_dir, 0, 10), CheckpointPath(ckpt_dir, 0, 15),
                                 CheckpointPath(ckpt_dir, 0, 20)});
}

TEST_CASE(
    "resume refuses another server's checkpoint, a version past the run's, clocks of other workers, another "
    "shape") {
  TableOnly t;  // TinyJob: 2 workers, train.steps 10
  const Checkpoint good = SnapshotTable(*t.table, 0, nullptr);
  TableOnly fresh;
  REQUIRE(RestoreTable(good, "x.ckpt", fresh.table.get()).ok());
  Checkpoint other = good;
  other.server = 1;
  CHECK(RestoreTable(other, "x.ckpt", fresh.table.get()).message() ==
        "'x.ckpt' is server 1's checkpoint, not 0's");
  Checkpoint late = good;  // BSP: a version is a step
  late.step = t.config.steps + 1;
  CHECK(RestoreTable(late, "x.ckpt", fresh.table.get()).message() ==
        "'x.ckpt': version " + std::to_string(t.config.steps + 1) + " is past the run's last, " +
            std::to_string(t.config.steps));
  TableOnly async("async");  // each of the 2 workers' updates makes a version: 20 in 10 steps
  Checkpoint twenty = SnapshotTable(*async.table, 0, nullptr);
  twenty.step = 20;
  CHECK(RestoreTable(twenty, "x.ckpt", async.table.get()).ok());
  twenty.step = 21;
  CHECK(RestoreTable(twenty, "x.ckpt", async.table.get()).message() ==
        "'x.ckpt': version 21 is past the run's last, 20");
  Checkpoint clocks = good;
  clocks.updates_from.resize(1000);
  CHECK(RestoreTable(clocks, "x.ckpt", fresh.table.get()).message() ==
        "'x.ckpt': updates_from lists 1000 workers, the plan has 2");
  Checkpoint transposed = good;
  std::reverse(transposed.tensors[0].shape.begin(), transposed.tensors[0].shape.end());
  CHECK(Contains(RestoreTable(transposed, "x.ckpt", fresh.table.get()).message(),
                 "does not match this server's slices"));
}

// Waits up to 20 s for `done`.
template <typename Done>
bool Eventually(Done done) {
  for (int i = 0; i < 2000 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return done();
}

TEST_CASE("a checkpoint that cannot be written is reported by Flush and tried again after a backoff") {
  TempDir dir;
  TableOnly t;
  const std::string ckpt_dir = dir.path + "/ckpt";
  Checkpointer checkpointer(ckpt_dir, 0, 3, 3, "");
  REQUIRE(checkpointer.Start().ok());
  std::filesystem::remove_all(ckpt_dir);
  { std::ofstream(ckpt_dir) << "not a directory"; }
  checkpointer.Write(SnapshotTable(*t.table, 0, nullptr));
  Status s = checkpointer.Flush();
  CHECK(!s.ok());
  CHECK(Contains(s.message(), ckpt_dir));
  CHECK(checkpointer.failures().in_a_row >= 1);
  CHECK(Contains(checkpointer.failures().last.message(), ckpt_dir));
  std::filesystem::remove(ckpt_dir);
  std::filesystem::create_directories(ckpt_dir);
  // Nothing new is handed over: the failed snapshot is written by the retry.
  CHECK(Eventually([&] { return checkpointer.written() == 1; }));
  CHECK(checkpointer.last_step() == 0);
  CHECK(checkpointer.failures().in_a_row == 0);
  CHECK(!checkpointer.failures().gave_up);
  t.table->Advance();
  checkpointer.Write(SnapshotTable(*t.table, 1, nullptr));
  static_cast<void>(checkpointer.Flush());
  CHECK(checkpointer.Flush().ok());
  CHECK(checkpointer.last_step() == 1);
}

TEST_CASE(
    "after the allowed failures in a row the checkpointer gives up and writes its last snapshot elsewhere") {
  TempDir dir;
  TableOnly t;
  const std::string ckpt_dir = dir.path + "/ckpt", rescue_dir = dir.path + "/rescue";
  Checkpointer checkpointer(ckpt_dir, 0, 3, 2, rescue_dir);
  REQUIRE(checkpointer.Start().ok());
  std::filesystem::remove_all(ckpt_dir);
  { std::ofstream(ckpt_dir) << "not a directory"; }
  t.table->Advance();
  checkpointer.Write(SnapshotTable(*t.table, 1, nullptr));
  REQUIRE(Eventually([&] { return checkpointer.failures().gave_up; }));
  CHECK(checkpointer.failures().in_a_row == 2);
  CHECK(checkpointer.failures().total == 2);
  Checkpoint rescued;
  REQUIRE(ReadCheckpoint(CheckpointPath(rescue_dir, 0, 1), &rescued).ok());
  CHECK(rescued.step == 1);
  CHECK(rescued.tensors.size() == SnapshotTable(*t.table, 1, nullptr).tensors.size());
  // Given up: what comes later is not tried.
  t.table->Advance();
  checkpointer.Write(SnapshotTable(*t.table, 2, nullptr));
  static_cast<void>(checkpointer.Flush());
  CHECK(checkpointer.failures().total == 2);
  CHECK(checkpointer.written() == 0);
}

// A disk that takes no write into `dir` of the steps in `stuck` until
// Open: a write of one of them waits there, as on a disk that does not answer.
class StuckDisk {
 public:
  StuckDisk(std::string dir, std::vector<uint64_t> stuck) : dir_(std::move(dir)), stuck_(std::move(stuck)) {}
  ~StuckDisk() { Open(); }
  std::function<Status(const std::string&, const Checkpoint&)> writer() {
    return [dir = dir_, stuck = stuck_, opened = opened_, elsewhere = elsewhere_](const std::string& path,
                                                                                  const Checkpoint& ckpt) {
      if (path.rfind(dir + "/", 0) != 0)
        ++*elsewhere;
      else if (std::count(stuck.begin(), stuck.end(), ckpt.step) > 0)
        opened.wait();
      return WriteCheckpoint(path, ckpt);
    };
  }
  // Writes outside `dir` so far (into the rescue directory).
  int elsewhere() const { return *elsewhere_; }
  void Open() {
    if (!open_) gate_.set_value();
    open_ = true;
  }

 private:
  std::string dir_;
  std::vector<uint64_t> stuck_;
  std::promise<void> gate_;
  std::shared_future<void> opened_ = gate_.get_future().share();
  std::shared_ptr<std::atomic<int>> elsewhere_ = std::make_shared<std::atomic<int>>(0);
  bool open_ = false;
};

TEST_CASE(
    "a write stuck past its deadline gives up at once: Flush says so, later snapshots go to the rescue "
    "directory, and Stop does not wait for the disk") {
  TempDir dir;
  TableOnly t;
  const std::string ckpt_dir = dir.path + "/ckpt", rescue_dir = dir.path + "/rescue";
  StuckDisk disk(ckpt_dir, {2});
  CheckpointDeadlines deadlines;
  deadlines.write = std::chrono::milliseconds(300);
  auto checkpointer = std::make_unique<Checkpointer>(ckpt_dir, 0, 3, 3, rescue_dir, deadlines, disk.writer());
  REQUIRE(checkpointer->Start().ok());
  t.table->Advance();
  checkpointer->Write(SnapshotTable(*t.table, 1, nullptr));
  REQUIRE(checkpointer->Flush().ok());
  t.table->Advance();
  checkpointer->Write(SnapshotTable(*t.table, 2, nullptr));
  Status s = checkpointer->Flush();
  CHECK(s.message() == "step 2's checkpoint write to '" + ckpt_dir +
                           "' has not ended in 0.3 s (train.checkpoint_timeout_s): the disk does not answer");
  const CheckpointFailures failures = checkpointer->failures();
  CHECK(failures.stuck);
  CHECK(failures.gave_up);
  CHECK(failures.total == 1);
  CHECK(checkpointer->Flush().message() == s.message());  // said again: the disk is still stuck
  CHECK(checkpointer->TakeSpare().tensors.empty());

  // What is handed over now goes to the rescue directory at once.
  t.table->Advance();
  checkpointer->Write(SnapshotTable(*t.table, 3, nullptr));
  Checkpoint rescued;
  REQUIRE(ReadCheckpoint(CheckpointPath(rescue_dir, 0, 3), &rescued).ok());
  CHECK(rescued.step == 3);
  CHECK(ListCheckpoints(ckpt_dir, 0) == std::vector<std::string>{CheckpointPath(ckpt_dir, 0, 1)});
  // The same step again (a server's final checkpoint where it stopped) is not written twice.
  checkpointer->Write(SnapshotTable(*t.table, 3, nullptr));
  CHECK(disk.elsewhere() == 1);

  // Stop leaves the stuck write behind; once the disk answers, it ends on its own.
  auto stopped = std::async(std::launch::async, [&] { checkpointer.reset(); });
  REQUIRE(stopped.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  disk.Open();
  CHECK(Eventually([&] { return ListCheckpoints(ckpt_dir, 0).size() == 2; }));
}

TEST_CASE(
    "a snapshot that waits past the handover deadline behind a slow write is a failure, and enough in a row "
    "give up") {
  TempDir dir;
  TableOnly t;
  const std::string ckpt_dir = dir.path + "/ckpt", rescue_dir = dir.path + "/rescue";
  StuckDisk disk(ckpt_dir, {1});
  CheckpointDeadlines deadlines;
  deadlines.handover = std::chrono::milliseconds(200);
  Checkpointer checkpointer(ckpt_dir, 0, 3, 2, rescue_dir, deadlines, disk.writer());
  REQUIRE(checkpointer.Start().ok());
  for (uint64_t step = 1; step <= 3; ++step) {
    t.table->Advance();
    checkpointer.Write(SnapshotTable(*t.table, step, nullptr));  // 1 is written, 2 waits, 3 is refused
  }
  CheckpointFailures failures = checkpointer.failures();
  CHECK(failures.in_a_row == 1);
  CHECK(!failures.gave_up);
  CHECK(failures.last.message() ==
        "waited 200 ms for step 2's to be taken up while step 1's is written to '" + ckpt_dir +
            "': not written");
  t.table->Advance();
  checkpointer.Write(SnapshotTable(*t.table, 4, nullptr));
  failures = checkpointer.failures();
  CHECK(failures.in_a_row == 2);
  CHECK(failures.gave_up);
  CHECK(!failures.stuck);
  Checkpoint rescued;
  REQUIRE(ReadCheckpoint(CheckpointPath(rescue_dir, 0, 4), &rescued).ok());
  CHECK(rescued.step == 4);
  // The slow write ends; what waited behind it was dropped on giving up.
  disk.Open();
  CHECK(!checkpointer.Flush().ok());
  CHECK(ListCheckpoints(ckpt_dir, 0) == std::vector<std::string>{CheckpointPath(ckpt_dir, 0, 1)});
}

}  // namespace
}  // namespace shoal
