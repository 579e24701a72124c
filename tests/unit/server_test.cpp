// Tests for lib/ps/server (with lib/comm's RpcServer and RpcClient): one
// ParameterServer and several clients in one process over inproc://. Every
// wait is bounded: clients time out after at most 2 s, and so does the server.
#include <doctest/doctest.h>

#include "server_fixture.h"
#include "test_util.h"
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include <atomic>
#include <cmath>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ckpt/checkpoint.h"
#include "comm/rpc_client.h"
#include "config/job.h"
#include "core/hash.h"
#include "plan/plan.h"
#include "ps/param_init.h"
#include "ps/server.h"
#include "server_fixture.h"

namespace shoal {
namespace {

using std::chrono::milliseconds;

// A worker's gradients for both slices: distinct per worker and element.
struct Grads {
  std::vector<float> weight, bias;
  std::vector<EntryRef> Entries() const {
    return {{0, weight.data(), static_cast<uint32_t>(weight.size())},
            {1, bias.data(), static_cast<uint32_t>(bias.size())}};
  }
};

Grads MakeGrads(int worker, int step) {
  Grads g;
  for (int i = 0; i < 12; ++i) g.weight.push_back(0.01f * (i + 1) * (worker + 1) - 0.05f * step);
  for (int i = 0; i < 3; ++i) g.bias.push_back(-0.2f * (i + 1) + 0.3f * worker + 0.1f * step);
  return g;
}

Status Update(RpcClient* client, const ServerFixture& f, uint64_t step, uint32_t sender, const Grads& g,
              Reply* reply) {
  return client->Call(f.Header(MsgType::kUpdate, step, sender), g.Entries(), reply);
}

// The fixture's plan served again from the checkpoints in `dir`, in the
// background; Stop() shuts it down and checks that Run ended well.
class ResumedServer {
 public:
  ResumedServer(const ServerFixture& f, const std::string& dir) : f_(f), server_(f.plan, Options(dir)) {
    Status s = server_.Start();
    INFO(s.ToString());
    REQUIRE(s.ok());
    run_ = std::async(std::launch::async, [this] { return server_.Run(); });
  }
  void Stop() {
    Reply reply;
    REQUIRE(Connect(f_)->Call({MsgType::kShutdown, f_.plan.hash_value(), 0, kToolSender}, {}, &reply).ok());
    REQUIRE(run_.wait_for(milliseconds(3000)) == std::future_status::ready);
    CHECK(run_.get().ok());
  }

 private:
  static ServerOptions Options(const std::string& dir) {
    ServerOptions o;
    o.resume_dir = dir;
    return o;
  }
  const ServerFixture& f_;
  ParameterServer server_;
  std::future<Status> run_;
};

TEST_CASE("bsp: a get for the next version waits for every worker's update, then sees their mean applied") {
  ServerFixture f("bsp");
  auto worker0 = Connect(f), worker1 = Connect(f);
  Reply reply;

  // Version 0 is there at once: the initial values.
  Status s = worker0->Call(f.Header(MsgType::kGet, 0, 0), {}, &reply);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(reply.view().header.type == MsgType::kReply);
  CHECK(reply.view().header.step == 0);
  CHECK(reply.view().entries.size() == 2);
  const std::vector<float> w0 = f.Initial(0), b0 = f.Initial(1);
  CheckValues(EntryValues(reply, 0), w0);
  CheckValues(EntryValues(reply, 1), b0);

  // Worker 0's update alone does not make version 1.
  const Grads g0 = MakeGrads(0, 0), g1 = MakeGrads(1, 0);
  REQUIRE(Update(worker0.get(), f, 0, 0, g0, &reply).ok());
  CHECK(reply.view().header.step == 0);

  // A get for version 1 is parked: a client that waits 200 ms times out.
  auto impatient = Connect(f, 200);
  s = impatient->Call(f.Header(MsgType::kGet, 1, 0), {}, &reply);
  CHECK(s.code() == Status::Code::kTimeout);
  CHECK(s.message() == "server '" + f.endpoint + "' did not answer 'get' (step 1) within 200 ms");

  // Worker 0 asks again and waits; worker 1's update releases it.
  REQUIRE(worker0->Send(f.Header(MsgType::kGet, 1, 0), {}).ok());
  std::this_thread::sleep_for(milliseconds(50));
  REQUIRE(Update(worker1.get(), f, 0, 1, g1, &reply).ok());
  CHECK(reply.view().header.step == 1);
  s = worker0->Receive(&reply);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(reply.view().header.step == 1);

  // Momentum's first step: v = mean(g); w = w0 − lr·v.
  std::vector<float> v_w(12), v_b(3), w1(12), b1(3);
  for (int i = 0; i < 12; ++i) {
    v_w[i] = (g0.weight[i] + g1.weight[i]) * 0.5f;
    w1[i] = w0[i] - kLr * v_w[i];
  }
  for (int i = 0; i < 3; ++i) {
    v_b[i] = (g0.bias[i] + g1.bias[i]) * 0.5f;
    b1[i] = b0[i] - kLr * v_b[i];
  }
  CheckValues(EntryValues(reply, 0), w1);
  CheckValues(EntryValues(reply, 1), b1);

  // The second step carries the velocity: v = 0.9·v + mean(g).
  const Grads h0 = MakeGrads(0, 1), h1 = MakeGrads(1, 1);
  REQUIRE(Update(worker1.get(), f, 1, 1, h1, &reply).ok());
  REQUIRE(Update(worker0.get(), f, 1, 0, h0, &reply).ok());
  CHECK(reply.view().header.step == 2);
  REQUIRE(worker0->Call(f.Header(MsgType::kGet, 2, 0), {}, &reply).ok());
  std::vector<float> w2(12);
  for (int i = 0; i < 12; ++i) w2[i] = w1[i] - kLr * (kMomentum * v_w[i] + (h0.weight[i] + h1.weight[i]) * 0.5f);
  CheckValues(EntryValues(reply, 0), w2);

  ServerStats stats = f.server->stats();
  CHECK(stats.version == 2);
  CHECK(stats.updates_received == 4);
  CHECK(stats.updates_applied == 2);
  CHECK(stats.gets_waited == 2);  // the impatient get and worker 0's
  CHECK(f.Stop().ok());
}

TEST_CASE("bsp: an update-get is answered, once every worker's update is in, with the next version") {
  ServerFixture f("bsp");
  auto worker0 = Connect(f), worker1 = Connect(f);
  auto impatient = Connect(f, 200);
  Reply reply0, reply1;
  const Grads g0 = MakeGrads(0, 0), g1 = MakeGrads(1, 0);

  // Alone, worker 0's update-get waits: a client giving up after 200 ms times out.
  Status s = impatient->Call(f.Header(MsgType::kUpdateGet, 0, 0), g0.Entries(), &reply0);
  CHECK(s.code() == Status::Code::kTimeout);
  CHECK(f.server->stats().version == 0);

  // Worker 1's update-get completes the step; it is answered with version 1,
  // and so is the parked request of worker 0.
  REQUIRE(worker1->Call(f.Header(MsgType::kUpdateGet, 0, 1), g1.Entries(), &reply1).ok());
  CHECK(reply1.view().header.step == 1);
  std::vector<float> w1(12);
  const std::vector<float> w0 = f.Initial(0);
  for (int i = 0; i < 12; ++i) w1[i] = w0[i] - kLr * (g0.weight[i] + g1.weight[i]) * 0.5f;
  CheckValues(EntryValues(reply1, 0), w1);

  // The next step from both, sent at once: both answers carry version 2.
  REQUIRE(worker0->Send(f.Header(MsgType::kUpdateGet, 1, 0), MakeGrads(0, 1).Entries()).ok());
  REQUIRE(worker1->Send(f.Header(MsgType::kUpdateGet, 1, 1), MakeGrads(1, 1).Entries()).ok());
  REQUIRE(worker0->Receive(&reply0).ok());
  REQUIRE(worker1->Receive(&reply1).ok());
  CHECK(reply0.view().header.step == 2);
  CHECK(reply1.view().header.step == 2);
  CheckValues(EntryValues(reply0, 0), EntryValues(reply1, 0));
  CHECK(f.server->stats().updates_applied == 2);
  CHECK(f.Stop().ok());
}

TEST_CASE("async: an update-get is applied and answered at once with the new values") {
  ServerFixture f("async");
  auto worker0 = Connect(f);
  Reply reply;
  REQUIRE(worker0->Call(f.Header(MsgType::kUpdateGet, 0, 0), MakeGrads(0, 0).Entries(), &reply).ok());
  CHECK(reply.view().header.step == 1);
  REQUIRE(worker0->Call(f.Header(MsgType::kUpdateGet, 1, 0), MakeGrads(0, 1).Entries(), &reply).ok());
  CHECK(reply.view().header.step == 2);
  CHECK(f.server->stats().updates_applied == 2);
  CHECK(f.Stop().ok());
}

TEST_CASE("bsp: a repeated update is dropped and answered; one for a future step is refused") {
  ServerFixture f("bsp");
  auto worker0 = Connect(f), worker1 = Connect(f);
  Reply reply;
  const Grads g = MakeGrads(0, 0);
  REQUIRE(Update(worker0.get(), f, 0, 0, g, &reply).ok());
  // A worker that rejoins repeats its step: answered, not counted twice.
  const Grads doubled = MakeGrads(5, 0);
  REQUIRE(Update(worker0.get(), f, 0, 0, doubled, &reply).ok());
  Status s = Update(worker0.get(), f, 3, 0, g, &reply);
  CHECK(s.code() == Status::Code::kInvalidArgument);
  CHECK(Contains(s.message(), "update for step 3 but layer 'fc' is at version 0"));
  ServerStats stats = f.server->stats();
  CHECK(stats.version == 0);
  CHECK(stats.updates_received == 1);
  CHECK(stats.updates_repeated == 1);
  // Step 0 completes with the first gradient of worker 0, not the repeat.
  const Grads g1 = MakeGrads(1, 0);
  REQUIRE(Update(worker1.get(), f, 0, 1, g1, &reply).ok());
  REQUIRE(worker0->Call(f.Header(MsgType::kGet, 1, 0), {}, &reply).ok());
  const std::vector<float> w0 = f.Initial(0);
  std::vector<float> w1(12);
  for (int i = 0; i < 12; ++i) w1[i] = w0[i] - kLr * (g.weight[i] + g1.weight[i]) * 0.5f;
  CheckValues(EntryValues(reply, 0), w1);
  // An update of a step already applied is dropped too, and an update-get
  // of it answered at once with the current values.
  REQUIRE(worker1->Call(f.Header(MsgType::kUpdateGet, 0, 1), g1.Entries(), &reply).ok());
  CHECK(reply.view().header.step == 1);
  CHECK(f.server->stats().updates_repeated == 2);
  CHECK(f.Stop().ok());
}

TEST_CASE("async: an update a worker repeats after rejoining is dropped, not applied twice") {
  ServerFixture f("async");
  auto worker0 = Connect(f);
  Reply reply;
  REQUIRE(Update(worker0.get(), f, 0, 0, MakeGrads(0, 0), &reply).ok());
  REQUIRE(worker0->Call(f.Header(MsgType::kJoin, 0, 0), {}, &reply).ok());
  CHECK(reply.view().header.step == 1);  // its next step
  REQUIRE(Update(worker0.get(), f, 0, 0, MakeGrads(0, 0), &reply).ok());
  ServerStats stats = f.server->stats();
  CHECK(stats.version == 1);
  CHECK(stats.updates_repeated == 1);
  CHECK(f.Stop().ok());
}

TEST_CASE("a server that stops answers the requests still waiting, naming why") {
  ServerFixture f("bsp");
  auto waiting = Connect(f);
  REQUIRE(waiting->Send(f.Header(MsgType::kGet, 5, 0), {}).ok());
  Reply reply;
  auto answer = std::async(std::launch::async, [&] { return waiting->Receive(&reply); });
  std::this_thread::sleep_for(milliseconds(50));
  CHECK(f.Stop().ok());
  Status s = answer.get();
  INFO(s.ToString());
  CHECK(Contains(s.message(), "server 0 is stopping"));
}

TEST_CASE("join answers with the values and the step to train next; a metric goes into the checkpoint") {
  const std::string dir = TempDirPath();
  ServerFixture f("bsp", dir);
  auto worker0 = Connect(f), worker1 = Connect(f);
  Reply reply;
  REQUIRE(worker0->Call(f.Header(MsgType::kJoin, 0, 0), {}, &reply).ok());
  CHECK(reply.view().header.step == 0);
  CheckValues(EntryValues(reply, 0), f.Initial(0));
  REQUIRE(Update(worker0.get(), f, 0, 0, MakeGrads(0, 0), &reply).ok());
  REQUIRE(Update(worker1.get(), f, 0, 1, MakeGrads(1, 0), &reply).ok());
  REQUIRE(worker1->Call(f.Header(MsgType::kJoin, 0, 1), {}, &reply).ok());
  CHECK(reply.view().header.step == 1);
  REQUIRE(worker0->Send({MsgType::kMetric, f.plan.hash_value(), 1, 0}, {}, R"({"step": 1, "test_accuracy": 0.5})").ok());
  REQUIRE(worker0->Receive(&reply).ok());
  REQUIRE(worker0->Send({MsgType::kMetric, f.plan.hash_value(), 1, 0}, {}, "[1, 2]").ok());
  CHECK(Contains(worker0->Receive(&reply).message(), "a metric must be a JSON object"));
  CHECK(f.Stop().ok());
  Checkpoint ckpt;
  REQUIRE(ReadCheckpoint(ListCheckpoints(dir, 0).back(), &ckpt).ok());
  CHECK(ckpt.step == 1);
  CHECK(ckpt.metric["test_accuracy"] == 0.5);
  CHECK(ckpt.updates_from == std::vector<uint64_t>{1, 1});
}

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

// Both workers' step-`step` gradients, averaged as the server does, for one slice.
std::vector<float> MeanGrads(uint32_t key, int step) {
  const Grads g0 = MakeGrads(0, step), g1 = MakeGrads(1, step);
  const std::vector<float>& a = key == 0 ? g0.weight : g0.bias;
  const std::vector<float>& b = key == 0 ? g1.weight : g1.bias;
  std::vector<float> mean(a.size());
  for (size_t i = 0; i < a.size(); ++i) mean[i] = (0.0f + a[i] + b[i]) * 0.5f;
  return mean;
}

// Runs step `step` of both workers on whichever server listens at
// `f.endpoint` and returns version step + 1 of `key`.
std::vector<float> TrainStep(const ServerFixture& f, int step, uint32_t key) {
  auto worker0 = Connect(f), worker1 = Connect(f);
  Reply reply;
  REQUIRE(Update(worker0.get(), f, step, 0, MakeGrads(0, step), &reply).ok());
  REQUIRE(Update(worker1.get(), f, step, 1, MakeGrads(1, step), &reply).ok());
  REQUIRE(worker0->Call(f.Header(MsgType::kGet, step + 1, 0), {}, &reply).ok());
  CHECK(reply.view().header.step == static_cast<uint64_t>(step) + 1);
  return EntryValues(reply, key);
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

TEST_CASE("scale_lr_with_workers: the server's rate is learning_rate × the plan's 2 workers") {
  ServerFixture f("bsp", "", "updater: sgd, scale_lr_with_workers: true");
  const std::vector<float> w1 = TrainStep(f, 0, 0), w0 = f.Initial(0), g = MeanGrads(0, 0);
  std::vector<float> want(w0.size());
  for (size_t i = 0; i < w0.size(); ++i) want[i] = w0[i] - 2 * kLr * g[i];
  CheckValues(w1, want);
  CHECK(f.Stop().ok());
}

TEST_CASE("a request for another plan is refused naming both plan hashes") {
  ServerFixture f("bsp");
  auto client = Connect(f);
  Reply reply;
  const uint64_t other = f.plan.hash_value() ^ 0x5a5a;
  Status s = client->Call({MsgType::kGet, other, 0, 0}, {}, &reply);
  CHECK(s.code() == Status::Code::kInvalidArgument);
  CHECK(Contains(s.message(), "request for plan " + HexU64(other) + ", this server runs plan " + f.plan.hash));
  const Grads g = MakeGrads(0, 0);
  s = client->Call({MsgType::kUpdate, other, 0, 0}, g.Entries(), &reply);
  CHECK(Contains(s.message(), HexU64(other)));
  CHECK(f.server->stats().updates_received == 0);
  CHECK(f.server->stats().bad_requests == 2);
  // The server goes on serving the right plan.
  CHECK(client->Call(f.Header(MsgType::kGet, 0, 0), {}, &reply).ok());
  CHECK(f.Stop().ok());
}

TEST_CASE("updates from a sender that is not a worker, or not matching the table, are refused") {
  ServerFixture f("bsp");
  auto client = Connect(f);
  Reply reply;
  const Grads g = MakeGrads(0, 0);
  for (uint32_t sender : {2u, 1000u, kToolSender}) {
    INFO("sender " << sender);
    Status s = Update(client.get(), f, 0, sender, g, &reply);
    CHECK(s.code() == Status::Code::kInvalidArgument);
    CHECK(Contains(s.message(), "sender " + std::to_string(sender) + " is not a worker of the plan (it has 2)"));
  }
  Status s = client->Call(f.Header(MsgType::kDone, 0, 2), {}, &reply);
  CHECK(Contains(s.message(), "sender 2 is not a worker of the plan"));

  // One slice missing; a slice of the wrong size; an unknown key.
  s = client->Call(f.Header(MsgType::kUpdate, 0, 0), {g.Entries()[0]}, &reply);
  CHECK(Contains(s.message(), "update from worker 0 carries 1 slices of layer 'fc'; the plan gives it 2 of them "
                              "on this server"));
  s = client->Call(f.Header(MsgType::kUpdate, 0, 0), {}, &reply);
  CHECK(Contains(s.message(), "update from worker 0 carries no slices; the plan gives it 2 on this server"));
  std::vector<EntryRef> wrong = g.Entries();
  wrong[1].count = 2;
  s = client->Call(f.Header(MsgType::kUpdate, 0, 0), wrong, &reply);
  CHECK(Contains(s.message(), "update slice 1 of 2 floats does not match this server's table"));
  wrong = g.Entries();
  wrong[1].key = 9;
  s = client->Call(f.Header(MsgType::kUpdate, 0, 0), wrong, &reply);
  CHECK(Contains(s.message(), "update slice 9 of 3 floats does not match"));
  // A refused update does not count as the worker's contribution.
  CHECK(Update(client.get(), f, 0, 0, g, &reply).ok());
  CHECK(f.server->stats().updates_received == 1);
  CHECK(f.Stop().ok());
}

TEST_CASE("garbage bytes are answered with an error and the server keeps serving") {
  ServerFixture f("bsp");
  nng_socket raw;
  REQUIRE(nng_req0_open(&raw) == 0);
  nng_socket_set_ms(raw, NNG_OPT_RECVTIMEO, kTimeoutMs);
  nng_socket_set_ms(raw, NNG_OPT_SENDTIMEO, kTimeoutMs);
  REQUIRE(nng_dial(raw, f.endpoint.c_str(), nullptr, 0) == 0);
  const char garbage[] = "GET / HTTP/1.1\r\n\r\n";
  REQUIRE(nng_send(raw, const_cast<char*>(garbage), sizeof garbage - 1, 0) == 0);
  void* buf = nullptr;
  size_t size = 0;
  REQUIRE(nng_recv(raw, &buf, &size, NNG_FLAG_ALLOC) == 0);
  MessageView view;
  REQUIRE(Decode(static_cast<unsigned char*>(buf), size, &view).ok());
  nng_free(buf, size);
  nng_close(raw);
  CHECK(view.header.type == MsgType::kError);
  CHECK(Contains(view.text, "message of 18 bytes is shorter than a header"));
  CHECK(f.server->stats().bad_requests == 1);

  auto client = Connect(f);
  Reply reply;
  CHECK(client->Call(f.Header(MsgType::kGet, 0, 0), {}, &reply).ok());
  CHECK(f.Stop().ok());
}

TEST_CASE("done: the first worker's done waits for the last; both get the final parameters; Run returns") {
  const std::string dir = TempDirPath();
  ServerFixture f("bsp", dir);
  auto worker0 = Connect(f), worker1 = Connect(f);
  Reply reply;
  const Grads g0 = MakeGrads(0, 0), g1 = MakeGrads(1, 0);
  REQUIRE(Update(worker0.get(), f, 0, 0, g0, &reply).ok());
  REQUIRE(Update(worker1.get(), f, 0, 1, g1, &reply).ok());
  REQUIRE(worker0->Call(f.Header(MsgType::kGet, 1, 0), {}, &reply).ok());
  const std::vector<float> final_w = EntryValues(reply, 0), final_b = EntryValues(reply, 1);

  Reply reply0;
  auto done0 = std::async(std::launch::async, [&] {
    return worker0->Call(f.Header(MsgType::kDone, ~0ull, 0), {}, &reply0);
  });
  CHECK(done0.wait_for(milliseconds(200)) == std::future_status::timeout);
  CHECK(f.run.wait_for(milliseconds(0)) == std::future_status::timeout);  // still serving

  Reply reply1;
  Status s1 = worker1->Call(f.Header(MsgType::kDone, ~0ull, 1), {}, &reply1);
  INFO(s1.ToString());
  REQUIRE(s1.ok());
  REQUIRE(done0.wait_for(milliseconds(kTimeoutMs)) == std::future_status::ready);
  Status s0 = done0.get();
  INFO(s0.ToString());
  REQUIRE(s0.ok());
  for (const Reply* r : {&reply0, &reply1}) {
    CHECK(r->view().header.step == 1);
    CHECK(EntryValues(*r, 0) == final_w);
    CHECK(EntryValues(*r, 1) == final_b);
  }

  // Run returns by itself (well before its 2 s idle timeout), writing a final checkpoint.
  REQUIRE(f.run.wait_for(milliseconds(3000)) == std::future_status::ready);
  Status run = f.run.get();
  INFO(run.ToString());
  CHECK(run.ok());
  std::vector<std::string> ckpts = ListCheckpoints(dir, 0);
  REQUIRE(ckpts.size() == 1);
  CHECK(ckpts[0] == CheckpointPath(dir, 0, 1));
  Checkpoint ckpt;
  REQUIRE(ReadCheckpoint(ckpts[0], &ckpt).ok());
  CHECK(ckpt.plan_hash == f.plan.hash);
  CHECK(ckpt.step == 1);
  CHECK(ckpt.updates == 2);
  REQUIRE(ckpt.tensors.size() == 4);  // value and velocity of each slice
  CHECK(ckpt.tensors[0].name == "fc.weight");
  CHECK(ckpt.tensors[0].data == final_w);
  CHECK(ckpt.tensors[1].name == "fc.weight@velocity");
  CHECK(ckpt.tensors[3].name == "fc.bias@velocity");
}

TEST_CASE("async: each update is applied as it arrives and gets answer at once") {
  ServerFixture f("async");
  auto worker0 = Connect(f), worker1 = Connect(f);
  Reply reply;
  const std::vector<float> w0 = f.Initial(0);
  const Grads g0 = MakeGrads(0, 0), g1 = MakeGrads(1, 0);

  REQUIRE(Update(worker0.get(), f, 0, 0, g0, &reply).ok());
  CHECK(reply.view().header.step == 1);
  // No waiting for versions in async: a get for any version answers now.
  Status s = worker1->Call(f.Header(MsgType::kGet, 5, 1), {}, &reply);
  REQUIRE(s.ok());
  CHECK(reply.view().header.step == 1);
  std::vector<float> w1(12);
  for (int i = 0; i < 12; ++i) w1[i] = w0[i] - kLr * g0.weight[i];
  CheckValues(EntryValues(reply, 0), w1);

  // Worker 1's update, computed on the same step's values, applies on top.
  REQUIRE(Update(worker1.get(), f, 0, 1, g1, &reply).ok());
  CHECK(reply.view().header.step == 2);
  REQUIRE(Update(worker1.get(), f, 1, 1, g1, &reply).ok());
  CHECK(reply.view().header.step == 3);
  REQUIRE(worker0->Call(f.Header(MsgType::kGet, 0, 0), {}, &reply).ok());
  std::vector<float> v(12), w(12);
  for (int i = 0; i < 12; ++i) {
    v[i] = g0.weight[i];
    w[i] = w1[i];
    for (int k = 0; k < 2; ++k) {
      v[i] = kMomentum * v[i] + g1.weight[i];
      w[i] -= kLr * v[i];
    }
  }
  CheckValues(EntryValues(reply, 0), w);
  ServerStats stats = f.server->stats();
  CHECK(stats.version == 3);
  CHECK(stats.updates_applied == 3);
  CHECK(stats.gets_waited == 0);
  CHECK(f.Stop().ok());
}

// The cluster fields of ssp with slack `s`, for ServerFixture.
std::string Ssp(int s) { return "ssp, staleness: " + std::to_string(s); }

TEST_CASE("ssp: a worker ahead parks exactly when the slowest clock is below its clock minus the slack") {
  ServerFixture f(Ssp(2));
  auto fast = Connect(f), slow = Connect(f);
  Reply reply;
  // The fast worker's steps 0 and 1 read at clocks 1 and 2 while the slow
  // worker is at 0: within the slack, answered at once (the second exactly at it).
  for (int step = 0; step < 2; ++step) {
    REQUIRE(fast->Call(f.Header(MsgType::kUpdateGet, step, 0), MakeGrads(0, step).Entries(), &reply).ok());
    CHECK(reply.view().header.step == static_cast<uint64_t>(step) + 1);
  }
  CHECK(f.server->stats().ssp_waits == 0);
  CHECK(f.server->stats().max_staleness_served == 2);

  // Step 2 reads at clock 3: 3 − 0 > 2, so it parks, its update applied all the same.
  REQUIRE(fast->Send(f.Header(MsgType::kUpdateGet, 2, 0), MakeGrads(0, 2).Entries()).ok());
  Reply parked;
  auto answer = std::async(std::launch::async, [&] { return fast->Receive(&parked); });
  CHECK(answer.wait_for(milliseconds(200)) == std::future_status::timeout);
  ServerStats stats = f.server->stats();
  CHECK(stats.ssp_waits == 1);
  CHECK(stats.version == 3);

  // The slow worker's step 0 brings the slowest clock to 1, and 3 − 1 <= 2:
  // both are answered, with every update so far.
  REQUIRE(slow->Call(f.Header(MsgType::kUpdateGet, 0, 1), MakeGrads(1, 0).Entries(), &reply).ok());
  REQUIRE(answer.wait_for(milliseconds(kTimeoutMs)) == std::future_status::ready);
  Status s = answer.get();
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(reply.view().header.step == 4);
  CHECK(parked.view().header.step == 4);
  CheckValues(EntryValues(parked, 0), EntryValues(reply, 0));
  stats = f.server->stats();
  CHECK(stats.ssp_waits == 1);
  CHECK(stats.max_staleness_served == 2);
  CHECK(stats.updates_from == std::vector<uint64_t>{3, 1});
  CHECK(f.Stop().ok());
}

TEST_CASE("ssp: slack 0 reads what bsp would, a done worker holds nobody back, a skipped clock is refused") {
  ServerFixture f(Ssp(0));
  auto worker0 = Connect(f), worker1 = Connect(f);
  Reply reply0, reply1;
  // Worker 0's read at clock 1 waits for worker 1's update of step 0.
  REQUIRE(worker0->Send(f.Header(MsgType::kUpdateGet, 0, 0), MakeGrads(0, 0).Entries()).ok());
  auto answer = std::async(std::launch::async, [&] { return worker0->Receive(&reply0); });
  CHECK(answer.wait_for(milliseconds(200)) == std::future_status::timeout);
  REQUIRE(worker1->Call(f.Header(MsgType::kUpdateGet, 0, 1), MakeGrads(1, 0).Entries(), &reply1).ok());
  REQUIRE(answer.wait_for(milliseconds(kTimeoutMs)) == std::future_status::ready);
  REQUIRE(answer.get().ok());
  CheckValues(EntryValues(reply0, 0), EntryValues(reply1, 0));
  CHECK(f.server->stats().max_staleness_served == 0);

  Status s = Update(worker0.get(), f, 5, 0, MakeGrads(0, 5), &reply0);
  CHECK(Contains(s.message(), "update for step 5 but worker 0's clock here is 1"));

  // Worker 1 is done at clock 1; worker 0 reads at clock 2 at once.
  REQUIRE(worker1->Send(f.Header(MsgType::kDone, 0, 1), {}).ok());
  auto done1 = std::async(std::launch::async, [&] { return worker1->Receive(&reply1); });
  std::this_thread::sleep_for(milliseconds(50));
  REQUIRE(worker0->Call(f.Header(MsgType::kUpdateGet, 1, 0), MakeGrads(0, 1).Entries(), &reply0).ok());
  CHECK(reply0.view().header.step == 3);
  CHECK(f.server->stats().ssp_waits == 1);
  REQUIRE(worker0->Call(f.Header(MsgType::kDone, 0, 0), {}, &reply0).ok());
  REQUIRE(done1.wait_for(milliseconds(kTimeoutMs)) == std::future_status::ready);
  CHECK(done1.get().ok());
  REQUIRE(f.run.wait_for(milliseconds(3000)) == std::future_status::ready);
  CHECK(f.run.get().ok());
}

// A worker's replica as it might be after some local steps: the centre
// (cw, cb) moved by `offset` (+ i/10 for weight element i).
Grads Replica(const std::vector<float>& cw, const std::vector<float>& cb, float offset) {
  Grads x;
  for (size_t i = 0; i < cw.size(); ++i) x.weight.push_back(cw[i] + offset + 0.1f * i);
  for (size_t i = 0; i < cb.size(); ++i) x.bias.push_back(cb[i] - offset);
  return x;
}

// alpha·(x − c), and c moved by it.
void Pull(float alpha, const std::vector<float>& x, std::vector<float>* c, std::vector<float>* d) {
  d->resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    (*d)[i] = alpha * (x[i] - (*c)[i]);
    (*c)[i] += (*d)[i];
  }
}

TEST_CASE("easgd: an exchange moves the centre by alpha·(x − centre) and answers with that difference") {
  ServerFixture f("easgd, easgd_alpha: 0.25");
  auto worker0 = Connect(f), worker1 = Connect(f);
  Reply reply;
  REQUIRE(worker0->Call(f.Header(MsgType::kJoin, 0, 0), {}, &reply).ok());
  CHECK(reply.view().header.step == 0);
  std::vector<float> cw = f.Initial(0), cb = f.Initial(1), dw, db;

  const Grads x0 = Replica(cw, cb, 1.0f);
  REQUIRE(worker0->Call(f.Header(MsgType::kExchange, 3, 0), x0.Entries(), &reply).ok());
  CHECK(reply.view().header.step == 1);
  Pull(0.25f, x0.weight, &cw, &dw);
  Pull(0.25f, x0.bias, &cb, &db);
  CheckValues(EntryValues(reply, 0), dw);
  CheckValues(EntryValues(reply, 1), db);
  REQUIRE(worker1->Call(f.Header(MsgType::kGet, 0, 1), {}, &reply).ok());
  CheckValues(EntryValues(reply, 0), cw);

  // Worker 1 pulls from where the centre is now.
  const Grads x1 = Replica(f.Initial(0), f.Initial(1), -2.0f);
  REQUIRE(worker1->Call(f.Header(MsgType::kExchange, 3, 1), x1.Entries(), &reply).ok());
  Pull(0.25f, x1.weight, &cw, &dw);
  CheckValues(EntryValues(reply, 0), dw);

  // A rejoined worker goes on after its last exchange; repeating that step's
  // exchange moves nothing and gets a difference of 0.
  REQUIRE(worker0->Call(f.Header(MsgType::kJoin, 0, 0), {}, &reply).ok());
  CHECK(reply.view().header.step == 4);
  REQUIRE(worker0->Call(f.Header(MsgType::kExchange, 3, 0), x0.Entries(), &reply).ok());
  CheckValues(EntryValues(reply, 0), std::vector<float>(12, 0.0f));
  REQUIRE(worker0->Call(f.Header(MsgType::kGet, 0, 0), {}, &reply).ok());
  CheckValues(EntryValues(reply, 0), cw);
  ServerStats stats = f.server->stats();
  CHECK(stats.version == 2);
  CHECK(stats.updates_from == std::vector<uint64_t>{1, 1});
  CHECK(stats.updates_repeated == 1);

  // Gradients have no place at the centre.
  Status s = worker0->Call(f.Header(MsgType::kUpdateGet, 4, 0), MakeGrads(0, 4).Entries(), &reply);
  CHECK(Contains(s.message(), "update-get under consistency 'easgd': its workers send their parameters"));
  CHECK(f.Stop().ok());
}

TEST_CASE("an exchange is refused under another consistency, and without the sender's slices") {
  ServerFixture bsp("bsp"), easgd("easgd");
  const Grads x = MakeGrads(0, 0);
  Reply reply;
  Status s = Connect(bsp)->Call(bsp.Header(MsgType::kExchange, 0, 0), x.Entries(), &reply);
  CHECK(Contains(s.message(), "an exchange needs consistency 'easgd'; this server runs 'bsp'"));
  s = Connect(easgd)->Call(easgd.Header(MsgType::kExchange, 0, 0), {x.Entries()[0]}, &reply);
  CHECK(Contains(s.message(), "exchange from worker 0 carries 1 slices of layer 'fc'; the plan gives it 2 of them on this server"));
  CHECK(easgd.server->stats().version == 0);
  CHECK(bsp.Stop().ok());
  CHECK(easgd.Stop().ok());
}

TEST_CASE("easgd: a checkpoint holds the centre's values and no updater state; a resumed server serves them") {
  const std::string dir = TempDirPath();
  ServerFixture f("easgd", dir);
  auto worker0 = Connect(f);
  Reply reply;
  REQUIRE(worker0->Call(f.Header(MsgType::kExchange, 6, 0), Replica(f.Initial(0), f.Initial(1), 0.5f).Entries(),
                        &reply).ok());
  REQUIRE(worker0->Call(f.Header(MsgType::kGet, 0, 0), {}, &reply).ok());
  const std::vector<float> centre = EntryValues(reply, 0);
  REQUIRE(f.Stop().ok());

  Checkpoint ckpt;
  REQUIRE(ReadCheckpoint(ListCheckpoints(dir, 0).back(), &ckpt).ok());
  REQUIRE(ckpt.tensors.size() == 2);  // fc.weight and fc.bias: no velocity though the updater is momentum
  CHECK(ckpt.tensors[0].name == "fc.weight");
  CHECK(ckpt.tensors[0].data == centre);
  CHECK(ckpt.updates_from == std::vector<uint64_t>{7, 0});

  ResumedServer again(f, dir);
  REQUIRE(Connect(f)->Call(f.Header(MsgType::kJoin, 0, 0), {}, &reply).ok());
  CHECK(reply.view().header.step == 7);
  CheckValues(EntryValues(reply, 0), centre);
  again.Stop();
  std::filesystem::remove_all(dir);
}

TEST_CASE("a stats request is answered with JSON and a shutdown ends Run") {
  ServerFixture f("bsp");
  auto tool = Connect(f);
  Reply reply;
  REQUIRE(tool->Call(f.Header(MsgType::kStats, 0, kToolSender), {}, &reply).ok());
  CHECK(reply.view().header.type == MsgType::kStats);
  nlohmann::json j = nlohmann::json::parse(reply.view().text);
  CHECK(j["version"] == 0);
  CHECK(j["workers_done"] == 0);
  CHECK(j["consistency"] == "bsp");
  CHECK(j["updates_from"] == nlohmann::json::array({0, 0}));
  CHECK(j["ssp_waits"] == 0);
  CHECK(j["max_staleness_served"] == 0);
  REQUIRE(tool->Call(f.Header(MsgType::kShutdown, 0, kToolSender), {}, &reply).ok());
  REQUIRE(f.run.wait_for(milliseconds(3000)) == std::future_status::ready);
  CHECK(f.run.get().ok());
}

TEST_CASE("a server that hears from nobody gives up after the plan's timeout") {
  // A short timeout of its own so the test stays quick.
  JobConfig job;
  std::string text = TinyJob("bsp");
  text.replace(text.find("timeout_ms: 2000"), 16, "timeout_ms: 150");
  REQUIRE(ParseJob(text, "tiny.yaml", &job).ok());
  PlanOptions options;
  options.endpoints = {UniqueEndpoint()};
  Plan plan;
  REQUIRE(MakeDataParallelPlan(job, options, &plan).ok());
  ParameterServer server(plan, ServerOptions());
  REQUIRE(server.Start().ok());
  auto run = std::async(std::launch::async, [&] { return server.Run(); });
  REQUIRE(run.wait_for(milliseconds(kTimeoutMs)) == std::future_status::ready);
  Status s = run.get();
  CHECK(s.code() == Status::Code::kTimeout);
  CHECK(s.message() == "no request from any worker for 150 ms (at version 0, 0 of 2 workers done)");
}

TEST_CASE("a server id outside the plan is refused at Start") {
  JobConfig job;
  REQUIRE(ParseJob(TinyJob("bsp"), "tiny.yaml", &job).ok());
  Plan plan;
  REQUIRE(MakeDataParallelPlan(job, PlanOptions(), &plan).ok());
  ServerOptions options;
  options.id = 1;
  ParameterServer server(plan, options);
  Status s = server.Start();
  CHECK(s.code() == Status::Code::kInvalidArgument);
  CHECK(s.message() == "server id 1 is not in the plan (it has 1 servers)");
}

}  // namespace
}  // namespace shoal
