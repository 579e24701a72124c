// A ParameterServer in this process for the unit tests (server_test.cpp,
// server_layers_test.cpp, elastic_table_test.cpp): a tiny plan over inproc://,
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
#include <vector>

#include "comm/rpc_client.h"
#include "config/job.h"
#include "plan/plan.h"
#include "ps/param_init.h"
#include "ps/server.h"

namespace shoal {

using std::chrono::milliseconds;

constexpr int kTimeoutMs = 2000;
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
         "  layers:\n" + layers +
         "train: {steps: 10, " + train + ", learning_rate: 0.1, momentum: 0.9, seed: 3}\n"
         "cluster: {nworkers_per_group: 2, nservers_per_group: 1, consistency: " +
         consistency + ", timeout_ms: " + std::to_string(kTimeoutMs) + cluster + "}\n";
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
                         const std::string& train = "updater: momentum", const std::string& layers = kOneLayer,
                         const std::string& cluster = "") {
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
  bool Shutdown() {
    if (run.wait_for(milliseconds(0)) != std::future_status::ready) {
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
    return {type, plan.hash_value(), step, sender};
  }
};

inline std::unique_ptr<RpcClient> Connect(const ServerFixture& f, int timeout_ms = kTimeoutMs) {
  auto client = std::make_unique<RpcClient>();
  REQUIRE(client->Dial(f.endpoint, timeout_ms).ok());
  return client;
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

}  // namespace shoal
