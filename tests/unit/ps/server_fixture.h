// A ParameterServer in this process for the unit tests of lib/ps and the
// parameter tables (tests/unit/ps, tests/unit/train): a tiny plan over inproc://,
// the server running on a thread, and clients to talk to it. Every wait is
// bounded: clients time out after at most 2 s, and so does the server.
#pragma once

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "comm/rpc_client.h"
#include "config/job.h"
#include "plan/plan.h"
#include "ps/param_init.h"
#include "ps/server.h"
#include "test_util.h"

namespace shoal {

using std::chrono::milliseconds;

constexpr int kTimeoutMs = 2000;
// A worker's table's deadline where every peer is healthy: generous, so that
// a loaded machine (ctest -j2 runs this suite beside whole training runs)
// never fails a join or a step that merely ran slow.
constexpr int kClientTimeoutMs = 20000;
constexpr float kLr = 0.1f, kMomentum = 0.9f;

// data [1,2,2] → fully_connected 3 → softmax_loss: fc.weight (12 floats, key 0)
// and fc.bias (3 floats, key 1), both on the one server; two workers.
const char* const kOneLayer =
    "    - {name: data, type: data, shape: [1, 2, 2]}\n"
    "    - {name: fc, type: fully_connected, srclayers: data, num_output: 3}\n"
    "    - {name: loss, type: softmax_loss, srclayers: [fc, data]}\n";
// The same with a second layer on top: fc2.weight (6 floats, key 2) and fc2.bias (2, key 3).
const char* const kTwoLayers =
    "    - {name: data, type: data, shape: [1, 2, 2]}\n"
    "    - {name: fc, type: fully_connected, srclayers: data, num_output: 3}\n"
    "    - {name: fc2, type: fully_connected, srclayers: fc, num_output: 2}\n"
    "    - {name: loss, type: softmax_loss, srclayers: [fc2, data]}\n";

// `train` adds fields to the train section (or overrides the updater);
// `consistency` follows "consistency:" in the cluster mapping, so it may
// carry its model's fields too ("ssp, staleness: 1"); `cluster` adds more.
inline std::string TinyJob(const std::string& consistency, const std::string& train = "updater: momentum",
                           const std::string& layers = kOneLayer, const std::string& cluster = "") {
  return "model:\n"
         "  layers:\n" +
         layers + "train: {steps: 10, " + train +
         ", learning_rate: 0.1, momentum: 0.9, seed: 3}\n"
         "cluster: {nworkers_per_group: 2, nservers_per_group: 1, consistency: " +
         consistency + ", timeout_ms: " + std::to_string(kTimeoutMs) + cluster + "}\n";
}

// The incarnation of worker `w` in these tests (a tool's is 0).
inline uint64_t TestIncarnation(uint32_t sender) { return sender < 1000 ? 100 + sender : 0; }

// Every worker of `plan` joins the server at `endpoint` where it is, as a
// dl-worker does first: after that, its requests are its incarnation's.
inline void JoinWorkers(const std::string& endpoint, const Plan& plan) {
  RpcClient client;
  REQUIRE(client.Dial(endpoint, kTimeoutMs).ok());
  for (const auto& w : plan.workers) {
    Reply reply;
    const uint32_t id = static_cast<uint32_t>(w.id);
    Status s = client.Call(
        {MsgType::kJoin, plan.hash_value(), kJoinWhereTheServerIs, id, TestIncarnation(id)}, {}, &reply);
    INFO(s.ToString());
    REQUIRE(s.ok());
  }
}

// One counter for the whole test program: no two servers share an endpoint.
inline std::string UniqueEndpoint() {
  static std::atomic<int> next{0};
  return "inproc://server-test-" + std::to_string(next++);
}

inline std::string TempDirPath() {
  char tmpl[] = "/tmp/shoal-server-test-XXXXXX";
  return mkdtemp(tmpl);
}

// A plan, and a server on a thread running Run() until done or shut down.
// The plan is declared first: the server keeps a reference to it.
struct ServerFixture {
  Plan plan;
  std::unique_ptr<ParameterServer> server;
  std::future<Status> run;
  std::string endpoint = UniqueEndpoint();
  std::string checkpoint_dir;

  explicit ServerFixture(const std::string& consistency, const std::string& ckpt_dir = "",
                         const std::string& train = "updater: momentum",
                         const std::string& layers = kOneLayer, const std::string& cluster = "") {
    checkpoint_dir = ckpt_dir;
    JobConfig job;
    REQUIRE(ParseJob(TinyJob(consistency, train, layers, cluster), "tiny.yaml", &job).ok());
    PlanOptions options;
    options.endpoints = {endpoint};
    REQUIRE(MakeDataParallelPlan(job, options, &plan).ok());
    REQUIRE(plan.slices.size() == (layers == kOneLayer ? 2u : 4u));
    ServerOptions server_options;
    server_options.checkpoint_dir = ckpt_dir;
    server = std::make_unique<ParameterServer>(plan, server_options);
    Status s = server->Start();
    INFO(s.ToString());
    REQUIRE(s.ok());
    run = std::async(std::launch::async, [this] { return server->Run(); });
    JoinWorkers(endpoint, plan);
  }

  // Waits until `n` requests wait at the server: what a test sent has been
  // taken, however long a loaded machine makes that (a sleep would guess).
  void WaitParked(size_t n) {
    const auto deadline = std::chrono::steady_clock::now() + milliseconds(kClientTimeoutMs);
    size_t parked;
    while ((parked = server->stats().parked) != n) {
      REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline,
                      parked << " requests parked, not " << n << ", after " << kClientTimeoutMs << " ms");
      std::this_thread::sleep_for(milliseconds(1));
    }
  }

  // Asks the server to stop (unless it already has) and waits for Run().
  Status Stop() {
    if (!Shutdown()) return Status::Timeout("the server did not stop");
    return run.get();
  }

  ~ServerFixture() {
    if (run.valid()) Shutdown();
    if (!checkpoint_dir.empty()) std::filesystem::remove_all(checkpoint_dir);
  }

 private:
  // A server whose workers are all done stops by itself: it is not sent a
  // shutdown then. That request would race the server closing its end, and
  // NNG 1.5.2 leaks a request sent on a connection in the instant it closes
  // (req0 hands its copy to the pipe's send aio just closed, which never
  // completes it): the sanitized suite's leak check failed on it once.
  bool Shutdown() {
    const bool stops_itself = static_cast<size_t>(server->stats().workers_done) == plan.workers.size();
    if (!stops_itself && run.wait_for(milliseconds(0)) != std::future_status::ready) {
      RpcClient tool;
      Reply reply;
      if (tool.Dial(endpoint, kTimeoutMs).ok())
        (void)tool.Call({MsgType::kShutdown, plan.hash_value(), 0, kToolSender}, {}, &reply);
    }
    return run.wait_for(milliseconds(kTimeoutMs + 1000)) == std::future_status::ready;
  }

 public:
  std::vector<float> Initial(uint32_t key) const {
    std::vector<float> full;
    InitializeParam(*plan.FindParam(plan.slices[key].param), plan.job.train.seed, &full);
    return full;
  }

  MsgHeader Header(MsgType type, uint64_t step, uint32_t sender) const {
    return {type, plan.hash_value(), step, sender, TestIncarnation(sender)};
  }
};

inline std::unique_ptr<RpcClient> Connect(const ServerFixture& f, int timeout_ms = kTimeoutMs) {
  auto client = std::make_unique<RpcClient>();
  REQUIRE(client->Dial(f.endpoint, timeout_ms).ok());
  return client;
}

// Worker `worker` joins as `incarnation` (at `step`) on a fresh connection,
// asking again while the server answers `wait` (the id's old life not yet
// heard to have ended), as RemoteTable::Join does: the reply is the join's
// answer, and the status the last call's.
inline Status JoinAs(const ServerFixture& f, uint32_t worker, uint64_t incarnation, Reply* reply,
                     uint64_t step = kJoinWhereTheServerIs) {
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(kClientTimeoutMs);
  for (;;) {
    Status s = Connect(f)->Call({MsgType::kJoin, f.plan.hash_value(), step, worker, incarnation}, {}, reply);
    if (!s.ok() || reply->view().header.type != MsgType::kWait) return s;
    REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline,
                    "still told to wait: " << reply->view().text);
    std::this_thread::sleep_for(milliseconds(20));
  }
}

inline std::vector<float> EntryValues(const Reply& reply, uint32_t key) {
  for (const auto& e : reply.view().entries)
    if (e.key == key) {
      std::vector<float> v(e.count);
      CopyValues(e, v.data());
      return v;
    }
  FAIL("the reply has no entry for key " << key);
  return {};
}

inline void CheckValues(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-6));
  }
}

// ---------------------------------------------------------------------------
// Gradients, for the one-layer job (keys 0 and 1).

// A worker's gradients for both slices: distinct per worker and element.
struct Grads {
  std::vector<float> weight, bias;
  std::vector<EntryRef> Entries() const {
    return {{0, weight.data(), static_cast<uint32_t>(weight.size())},
            {1, bias.data(), static_cast<uint32_t>(bias.size())}};
  }
};

inline Grads MakeGrads(int worker, int step) {
  Grads g;
  for (int i = 0; i < 12; ++i) g.weight.push_back(0.01f * (i + 1) * (worker + 1) - 0.05f * step);
  for (int i = 0; i < 3; ++i) g.bias.push_back(-0.2f * (i + 1) + 0.3f * worker + 0.1f * step);
  return g;
}

inline Status Update(RpcClient* client, const ServerFixture& f, uint64_t step, uint32_t sender,
                     const Grads& g, Reply* reply) {
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
    JoinWorkers(f.endpoint, f.plan);
  }
  void Stop() {
    Reply reply;
    REQUIRE(Connect(f_)->Call({MsgType::kShutdown, f_.plan.hash_value(), 0, kToolSender}, {}, &reply).ok());
    REQUIRE(run_.wait_for(milliseconds(3000)) == std::future_status::ready);
    CHECK(run_.get().ok());
  }
  ServerStats stats() { return server_.stats(); }

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

// Both workers' step-`step` gradients, averaged as the server does, for one slice.
inline std::vector<float> MeanGrads(uint32_t key, int step) {
  const Grads g0 = MakeGrads(0, step), g1 = MakeGrads(1, step);
  const std::vector<float>& a = key == 0 ? g0.weight : g0.bias;
  const std::vector<float>& b = key == 0 ? g1.weight : g1.bias;
  std::vector<float> mean(a.size());
  for (size_t i = 0; i < a.size(); ++i) mean[i] = (0.0f + a[i] + b[i]) * 0.5f;
  return mean;
}

// Runs step `step` of both workers on whichever server listens at
// `f.endpoint` and returns version step + 1 of `key`.
inline std::vector<float> TrainStep(const ServerFixture& f, int step, uint32_t key) {
  auto worker0 = Connect(f), worker1 = Connect(f);
  Reply reply;
  REQUIRE(Update(worker0.get(), f, step, 0, MakeGrads(0, step), &reply).ok());
  REQUIRE(Update(worker1.get(), f, step, 1, MakeGrads(1, step), &reply).ok());
  REQUIRE(worker0->Call(f.Header(MsgType::kGet, step + 1, 0), {}, &reply).ok());
  CHECK(reply.view().header.step == static_cast<uint64_t>(step) + 1);
  return EntryValues(reply, key);
}

// ---------------------------------------------------------------------------
// Gradients, for the two-layer job (layer by layer: what a worker sends with train.overlap).

// A worker's gradients of every slice of the two-layer job, distinct per worker, step and element.
struct LayerGrads {
  std::vector<std::vector<float>> slices;  // by key
  std::vector<EntryRef> Entries(std::vector<uint32_t> keys,
                                ValueEncoding encoding = ValueEncoding::kF32) const {
    std::vector<EntryRef> refs;
    for (uint32_t key : keys)
      refs.push_back({key, slices[key].data(), static_cast<uint32_t>(slices[key].size()), encoding});
    return refs;
  }
};

inline LayerGrads MakeLayerGrads(int worker, int step) {
  LayerGrads g;
  for (int count : {12, 3, 6, 2}) {
    std::vector<float> v;
    for (int i = 0; i < count; ++i)
      v.push_back(0.013f * (i + 1) * (worker + 1) - 0.07f * step + 0.001f * count);
    g.slices.push_back(v);
  }
  return g;
}

inline const std::vector<uint32_t> kFc = {0, 1}, kFc2 = {2, 3}, kBoth = {0, 1, 2, 3};

// Version 1 of `key` after one momentum step on both workers' step-0 gradients, as the server computes it.
inline std::vector<float> AfterOneStep(const ServerFixture& f, uint32_t key) {
  const std::vector<float> w0 = f.Initial(key);
  const LayerGrads g0 = MakeLayerGrads(0, 0), g1 = MakeLayerGrads(1, 0);
  std::vector<float> w1(w0.size());
  const size_t offset = f.plan.slices[key].offset;
  for (size_t i = 0; i < w1.size(); ++i)
    w1[i] = w0[offset + i] - kLr * ((0.0f + g0.slices[key][i] + g1.slices[key][i]) * 0.5f);
  return w1;
}

inline std::vector<uint32_t> KeysOf(const Reply& reply) {
  std::vector<uint32_t> keys;
  for (const auto& e : reply.view().entries) keys.push_back(e.key);
  return keys;
}

}  // namespace shoal
