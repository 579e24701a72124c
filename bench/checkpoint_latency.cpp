// How long a server's requests wait while it checkpoints: one server of the
// CNN (858k parameters with momentum: 6.9 MB a checkpoint) and one worker
// sending update-gets over inproc, each making a version; with a checkpoint
// every `every` versions, against none. Prints one JSON line: the latency
// of the requests that made a checkpoint and of those that did not.
//   checkpoint_latency JOB.yaml CKPT_DIR [STEPS] [EVERY]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "args.h"
#include "comm/rpc_client.h"
#include "config/job.h"
#include "plan/plan.h"
#include "ps/server.h"

using namespace shoal;

namespace {

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
}

int Fail(const Status& s) {
  std::fprintf(stderr, "checkpoint_latency: %s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s JOB.yaml CKPT_DIR [STEPS] [EVERY]\n", argv[0]);
    return 2;
  }
  const int steps = bench::IntArg(argc, argv, 3, "STEPS", 60, 1, 100000000);
  const int every = bench::IntArg(argc, argv, 4, "EVERY", 5, 1, 100000000);
  JobConfig job;
  Status s = LoadJobFile(argv[1],
                         {"cluster.nworkers_per_group=1", "train.checkpoint_every=" + std::to_string(every),
                          "train.steps=" + std::to_string(steps)},
                         &job);
  if (!s.ok()) return Fail(s);
  Plan plan;
  PlanOptions options;
  options.endpoints = {"inproc://checkpoint-latency"};
  s = MakeDataParallelPlan(job, options, &plan);
  if (!s.ok()) return Fail(s);
  ServerOptions server_options;
  server_options.checkpoint_dir = argv[2];
  server_options.keep_checkpoints = 2;
  ParameterServer server(plan, server_options);
  s = server.Start();
  if (!s.ok()) return Fail(s);
  auto run = std::async(std::launch::async, [&] { return server.Run(); });

  RpcClient client;
  s = client.Dial(options.endpoints[0], 60000);
  if (!s.ok()) return Fail(s);
  // A worker's first request is a join (incarnation 1: this process's only life).
  {
    Reply joined;
    s = client.Call({MsgType::kJoin, plan.hash_value(), kJoinWhereTheServerIs, 0, 1}, {}, &joined);
    if (!s.ok()) return Fail(s);
  }
  // The worker's slices: every slice, zero gradients (the values barely matter).
  std::vector<std::vector<float>> grads;
  std::vector<EntryRef> entries;
  for (const auto& slice : plan.slices) grads.emplace_back(slice.count, 0.0f);
  for (size_t i = 0; i < plan.slices.size(); ++i)
    entries.push_back({plan.slices[i].key, grads[i].data(), static_cast<uint32_t>(grads[i].size())});
  std::vector<double> with, without;
  for (int step = 0; step < steps; ++step) {
    Reply reply;
    const auto t0 = std::chrono::steady_clock::now();
    s = client.Call({MsgType::kUpdateGet, plan.hash_value(), static_cast<uint64_t>(step), 0, 1}, entries,
                    &reply);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!s.ok()) return Fail(s);
    ((every > 0 && (step + 1) % every == 0) ? with : without).push_back(ms);
  }
  Reply reply;
  s = client.Call({MsgType::kDone, plan.hash_value(), 0, 0, 1}, {}, &reply);
  if (!s.ok()) return Fail(s);
  s = run.get();
  if (!s.ok()) return Fail(s);
  nlohmann::json out = {{"steps", steps},
                        {"checkpoint_every", every},
                        {"checkpoint_mb", 0},
                        {"ms_checkpointing_median", Percentile(with, 0.5)},
                        {"ms_checkpointing_max", Percentile(with, 1.0)},
                        {"ms_other_median", Percentile(without, 0.5)},
                        {"ms_other_p90", Percentile(without, 0.9)}};
  size_t floats = 0;
  for (const auto& slice : plan.slices) floats += slice.count;
  out["checkpoint_mb"] = 8.0 * floats / 1e6;  // value and velocity
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
