// How fast a parameter server moves a tensor, against NNG itself: a worker's
// update-get round trip (the gradient of one fully connected layer of about
// FLOATS floats up, the next version down) through a ParameterServer on tcp
// loopback — dl-server's code, in this process — beside a raw NNG req/rep
// echo of the same bytes on the same loopback. The two alternate, ROUNDS round
// trips at a time, REPEATS times, so a noisy machine weighs on both alike.
// Prints one JSON line: each side's median GB/s (bytes up and down) and the
// ratio shoal ÷ raw of every repeat.
//   exchange_throughput FLOATS [ROUNDS] [REPEATS]
#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "args.h"
#include "comm/rpc_client.h"
#include "config/job.h"
#include "core/median.h"
#include "core/memory_tuning.h"
#include "plan/plan.h"
#include "ps/server.h"

using namespace shoal;

namespace {

using Clock = std::chrono::steady_clock;

int Fail(const std::string& what) {
  std::fprintf(stderr, "exchange_throughput: %s\n", what.c_str());
  return 1;
}

// A loopback port free now (the listener takes it a moment later).
std::string FreeEndpoint() {
  nng_socket s;
  nng_listener l;
  int port = 0;
  if (nng_rep0_open(&s) == 0 && nng_listen(s, "tcp://127.0.0.1:0", &l, 0) == 0)
    nng_listener_get_int(l, NNG_OPT_TCP_BOUND_PORT, &port);
  nng_close(s);
  return "tcp://127.0.0.1:" + std::to_string(port);
}

// NNG alone: a rep socket that sends every request back as it came.
class EchoServer {
 public:
  Status Start(const std::string& endpoint) {
    if (nng_rep0_open(&socket_) != 0 || nng_socket_set_size(socket_, NNG_OPT_RECVMAXSZ, 0) != 0 ||
        nng_listen(socket_, endpoint.c_str(), nullptr, 0) != 0)
      return Status::IOError("cannot listen on " + endpoint);
    thread_ = std::thread([this] {
      nng_msg* msg;
      while (nng_recvmsg(socket_, &msg, 0) == 0)
        if (nng_sendmsg(socket_, msg, 0) != 0) nng_msg_free(msg);
    });
    return Status::Ok();
  }
  ~EchoServer() {
    nng_close(socket_);
    if (thread_.joinable()) thread_.join();
  }

 private:
  nng_socket socket_ = NNG_SOCKET_INITIALIZER;
  std::thread thread_;
};

// ROUNDS raw round trips of `bytes`: the request filled from a buffer, as an
// encoder would, the reply received whole. Returns seconds.
double RawRounds(nng_socket client, const std::vector<char>& payload, int rounds) {
  const auto t0 = Clock::now();
  for (int i = 0; i < rounds; ++i) {
    nng_msg* msg;
    if (nng_msg_alloc(&msg, payload.size()) != 0) return -1;
    std::memcpy(nng_msg_body(msg), payload.data(), payload.size());
    if (nng_sendmsg(client, msg, 0) != 0 || nng_recvmsg(client, &msg, 0) != 0) return -1;
    nng_msg_free(msg);
  }
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FLOATS [ROUNDS] [REPEATS]\n", argv[0]);
    return 2;
  }
  KeepLargeAllocations();  // as dl-server and dl-worker do, for both sides
  const long long floats = bench::NumberArg(argc, argv, 1, "FLOATS", 0, 1, 1LL << 30);
  const int rounds = bench::IntArg(argc, argv, 2, "ROUNDS", 20, 1, 1000000);
  const int repeats = bench::IntArg(argc, argv, 3, "REPEATS", 5, 1, 1000);
  // One fully connected layer of 1024 inputs, as wide as FLOATS asks: its
  // weights and bias are the tensor that travels, in one slice.
  const long long outputs = std::max(1LL, floats / 1025);
  const std::string yaml =
      "name: exchange\nmodel:\n  layers:\n"
      "    - {name: data, type: data, shape: [1024]}\n"
      "    - {name: fc, type: fully_connected, srclayers: data, num_output: " +
      std::to_string(outputs) +
      "}\n"
      "    - {name: loss, type: softmax_loss, srclayers: [fc, data]}\n"
      "train: {batch_size: 1, steps: 1000000, updater: sgd, learning_rate: 1.0e-9}\n"
      "cluster: {nworkers_per_group: 1, consistency: bsp, slice_floats: 1073741824,"
      " timeout_ms: 60000}\n";
  JobConfig job;
  Status s = ParseJob(yaml, "exchange_throughput", &job);
  if (!s.ok()) return Fail(s.ToString());
  Plan plan;
  PlanOptions options;
  options.endpoints = {FreeEndpoint()};
  s = MakeDataParallelPlan(job, options, &plan);
  if (!s.ok()) return Fail(s.ToString());
  ParameterServer server(plan, ServerOptions{});
  s = server.Start();
  if (!s.ok()) return Fail(s.ToString());
  auto served = std::async(std::launch::async, [&] { return server.Run(); });
  auto client = std::make_unique<RpcClient>();
  s = client->Dial(options.endpoints[0], 60000);
  if (!s.ok()) return Fail(s.ToString());
  // A worker's first request is a join (incarnation 1: this process's only life).
  {
    Reply joined;
    s = client->Call({MsgType::kJoin, plan.hash_value(), kJoinWhereTheServerIs, 0, 1}, {}, &joined);
    if (!s.ok()) return Fail(s.ToString());
  }

  std::vector<std::vector<float>> grads;
  std::vector<EntryRef> entries;
  size_t bytes = kHeaderBytes;
  for (const auto& slice : plan.slices) grads.emplace_back(slice.count, 1e-3f);
  for (size_t i = 0; i < plan.slices.size(); ++i) {
    entries.push_back({plan.slices[i].key, grads[i].data(), static_cast<uint32_t>(grads[i].size())});
    bytes += kEntryHeaderBytes + 4 * grads[i].size();
  }

  EchoServer echo;
  const std::string echo_endpoint = FreeEndpoint();
  s = echo.Start(echo_endpoint);
  if (!s.ok()) return Fail(s.ToString());
  nng_socket raw;
  if (nng_req0_open(&raw) != 0 || nng_socket_set_size(raw, NNG_OPT_RECVMAXSZ, 0) != 0 ||
      nng_socket_set_ms(raw, NNG_OPT_RECVTIMEO, 60000) != 0 ||
      nng_dial(raw, echo_endpoint.c_str(), nullptr, 0) != 0)
    return Fail("cannot dial " + echo_endpoint);
  const std::vector<char> payload(bytes, 1);

  uint64_t step = 0;
  auto shoal_rounds = [&]() -> double {
    const auto t0 = Clock::now();
    for (int i = 0; i < rounds; ++i, ++step) {
      Reply reply;
      Status st = client->Call({MsgType::kUpdateGet, plan.hash_value(), step, 0, 1}, entries, &reply);
      if (!st.ok()) return -1;
      client->Recycle(&reply);  // as a worker does, once it has the values
    }
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  if (shoal_rounds() < 0 || RawRounds(raw, payload, rounds) < 0) return Fail("a warm-up round trip failed");

  const double moved = 2.0 * bytes * rounds / 1e9;  // up and down
  std::vector<double> shoal_gbs, raw_gbs, ratios;
  for (int r = 0; r < repeats; ++r) {
    const double a = shoal_rounds(), b = RawRounds(raw, payload, rounds);
    if (a < 0 || b < 0) return Fail("a round trip failed");
    shoal_gbs.push_back(moved / a);
    raw_gbs.push_back(moved / b);
    ratios.push_back(shoal_gbs.back() / raw_gbs.back());
  }
  nng_close(raw);
  Reply reply;
  s = client->Call({MsgType::kDone, plan.hash_value(), 0, 0, 1}, {}, &reply);
  if (!s.ok()) return Fail(s.ToString());
  reply.Reset();
  client.reset();  // the server ends once its worker has hung up
  s = served.get();
  if (!s.ok()) return Fail(s.ToString());

  nlohmann::json out = {{"message_mb", bytes / 1e6},
                        {"rounds", rounds},
                        {"repeats", repeats},
                        {"shoal_gb_per_s", Median(shoal_gbs)},
                        {"raw_nng_gb_per_s", Median(raw_gbs)},
                        {"ratio", Median(ratios)},
                        {"ratios", ratios}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
