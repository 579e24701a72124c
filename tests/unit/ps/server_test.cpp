// Tests for lib/ps/server (with lib/comm's RpcServer and RpcClient): one
// ParameterServer and several clients in one process over inproc://. Every
// wait is bounded: clients time out after at most 2 s, and so does the server.
#include <doctest/doctest.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
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

// What a get the server holds parked hears when `stop` stops the server.
Status AnswerAfterStop(ServerFixture& f, const std::function<void()>& stop) {
  auto waiting = Connect(f);
  REQUIRE(waiting->Send(f.Header(MsgType::kGet, 1, 0), {}).ok());
  Reply reply;
  auto answer = std::async(std::launch::async, [&] { return waiting->Receive(&reply); });
  f.WaitParked(1);
  stop();
  return answer.get();
}

TEST_CASE("a server that stops answers the requests still waiting, naming why: a server gone (exit 3)") {
  ServerFixture f("bsp");
  Status s = AnswerAfterStop(f, [&] { CHECK(f.Stop().ok()); });
  INFO(s.ToString());
  CHECK(s.IsUnavailable());
  CHECK(Contains(s.message(), "stopped before answering 'get' (step 1): server 0 is stopping (shut down)"));
  CHECK(f.server->stats().bad_requests == 0);  // its own stop refuses nothing
}

TEST_CASE("a server stopped by its hosting worker's failure tells what it holds: an error, unless a peer's") {
  for (const Status& why : {Status::InvalidArgument("worker 1: shard 'x' is corrupt"),
                            Status::Timeout("worker 1: server 2 did not answer")}) {
    INFO(why.ToString());
    ServerFixture f("bsp");
    Status s = AnswerAfterStop(f, [&] { f.server->Stop(why); });
    INFO(s.ToString());
    // A peer's failure is the server going away (exit 3); any other, exit 1 as its host's.
    CHECK(s.code() == (why.IsTimeout() ? Status::Code::kUnavailable : Status::Code::kInvalidArgument));
    CHECK(Contains(s.message(), "server 0 is stopping (" + why.ToString() + ")"));
    CHECK(f.run.get().ok());
  }
}

TEST_CASE(
    "no peer holds the request slots: a read far ahead is refused at once, and a tool waits with 4 at most") {
  ServerFixture f("bsp");
  Reply reply;
  Status s = Connect(f)->Call(f.Header(MsgType::kGet, 1000000, kToolSender), {}, &reply);
  CHECK(Contains(s.message(),
                 "a read of version 1000000 while the table is at 0: no worker waits for more than "
                 "the next version"));
  std::vector<std::unique_ptr<RpcClient>> tools;
  for (int i = 0; i < 4; ++i) {
    tools.push_back(Connect(f));
    REQUIRE(tools.back()->Send(f.Header(MsgType::kGet, 1, kToolSender), {}).ok());
  }
  f.WaitParked(4);
  s = Connect(f)->Call(f.Header(MsgType::kGet, 1, kToolSender), {}, &reply);
  CHECK(Contains(s.message(), "has 4 requests waiting already"));
  // The workers still get through: their step completes and their reads are answered.
  auto w0 = Connect(f), w1 = Connect(f);
  REQUIRE(Update(w0.get(), f, 0, 0, MakeGrads(0, 0), &reply).ok());
  REQUIRE(Update(w1.get(), f, 0, 1, MakeGrads(1, 0), &reply).ok());
  for (auto& t : tools) CHECK(t->Receive(&reply).ok());
  CHECK(f.Stop().ok());
}

TEST_CASE("join answers with the values and the step to train next; a metric goes into the checkpoint") {
  const std::string dir = TempDirPath();
  ServerFixture f("bsp", dir);
  auto worker0 = Connect(f), worker1 = Connect(f);
  Reply reply;
  REQUIRE(worker0->Call(f.Header(MsgType::kJoin, kJoinWhereTheServerIs, 0), {}, &reply).ok());
  CHECK(reply.view().header.step == 0);
  CheckValues(EntryValues(reply, 0), f.Initial(0));
  REQUIRE(Update(worker0.get(), f, 0, 0, MakeGrads(0, 0), &reply).ok());
  REQUIRE(Update(worker1.get(), f, 0, 1, MakeGrads(1, 0), &reply).ok());
  REQUIRE(worker1->Call(f.Header(MsgType::kJoin, kJoinWhereTheServerIs, 1), {}, &reply).ok());
  CHECK(reply.view().header.step == 1);
  REQUIRE(worker0->Send(f.Header(MsgType::kMetric, 1, 0), {}, R"({"step": 1, "test_accuracy": 0.5})").ok());
  REQUIRE(worker0->Receive(&reply).ok());
  REQUIRE(worker0->Send(f.Header(MsgType::kMetric, 1, 0), {}, "[1, 2]").ok());
  CHECK(Contains(worker0->Receive(&reply).message(), "a metric must be a JSON object"));
  // Only a joined worker's own life reports: a peer that knows the plan cannot plant an evaluation.
  REQUIRE(
      worker0->Send({MsgType::kMetric, f.plan.hash_value(), 1, 0, 7}, {}, R"({"test_accuracy": 1.0})").ok());
  CHECK(Contains(worker0->Receive(&reply).message(), "an old life of it, or another process"));
  CHECK(f.Stop().ok());
  Checkpoint ckpt;
  REQUIRE(ReadCheckpoint(ListCheckpoints(dir, 0).back(), &ckpt).ok());
  CHECK(ckpt.step == 1);
  CHECK(ckpt.metric["test_accuracy"] == 0.5);
  CHECK(ckpt.updates_from == std::vector<uint64_t>{1, 1});
}

TEST_CASE("scale_lr_with_workers: the server's rate is learning_rate × the plan's 2 workers") {
  ServerFixture f("bsp", "", "updater: sgd, scale_lr_with_workers: true");
  const std::vector<float> w1 = TrainStep(f, 0, 0), w0 = f.Initial(0), g = MeanGrads(0, 0);
  std::vector<float> want(w0.size());
  for (size_t i = 0; i < w0.size(); ++i) want[i] = w0[i] - 2 * kLr * g[i];
  CheckValues(w1, want);
  CHECK(f.Stop().ok());
}

// Steps 0 .. steps − 1 of workers 0 and 1, in turn.
void UpdateBoth(const ServerFixture& f, RpcClient* worker0, RpcClient* worker1, uint64_t steps) {
  Reply reply;
  for (uint64_t step = 0; step < steps; ++step) {
    REQUIRE(Update(worker0, f, step, 0, MakeGrads(0, static_cast<int>(step)), &reply).ok());
    REQUIRE(Update(worker1, f, step, 1, MakeGrads(1, static_cast<int>(step)), &reply).ok());
  }
}

// The steps of server 0's checkpoints in `dir`, oldest first.
std::vector<uint64_t> WrittenSteps(const std::string& dir) {
  std::vector<uint64_t> steps;
  for (const std::string& path : ListCheckpoints(dir, 0)) {
    Checkpoint ckpt;
    REQUIRE(ReadCheckpoint(path, &ckpt).ok());
    steps.push_back(ckpt.step);
  }
  return steps;
}

TEST_CASE("checkpoint: a worker's version to come is written when the table reaches it; a past one refused") {
  const std::string dir = TempDirPath();
  ServerFixture f("bsp", dir);
  auto worker0 = Connect(f), worker1 = Connect(f);
  Reply reply;
  REQUIRE(worker0->Call(f.Header(MsgType::kCheckpoint, 2, 0), {}, &reply).ok());
  UpdateBoth(f, worker0.get(), worker1.get(), 3);
  const Status past = worker0->Call(f.Header(MsgType::kCheckpoint, 3, 0), {}, &reply);
  CHECK(Contains(past.message(), "a checkpoint at version 3, which this server has reached (it is at 3)"));
  CHECK(f.Stop().ok());
  // Version 2, as asked, and the end's (the shutdown's, at 3); none at 1.
  CHECK(WrittenSteps(dir) == std::vector<uint64_t>{2, 3});
}

TEST_CASE(
    "checkpoint: under async versions to come are written, a later ask keeping an earlier; one passed "
    "answers") {
  const std::string dir = TempDirPath();
  ServerFixture f("async", dir);
  auto worker0 = Connect(f), worker1 = Connect(f);
  Reply reply;
  REQUIRE(worker0->Call(f.Header(MsgType::kCheckpoint, 3, 0), {}, &reply).ok());
  CHECK(reply.view().header.step == 0);
  REQUIRE(worker0->Call(f.Header(MsgType::kCheckpoint, 4, 0), {}, &reply).ok());
  UpdateBoth(f, worker0.get(), worker1.get(), 3);  // a version an update
  REQUIRE(worker0->Call(f.Header(MsgType::kCheckpoint, 5, 0), {}, &reply).ok());
  CHECK(reply.view().header.step == 6);
  CHECK(f.Stop().ok());
  // Versions 3 and 4, as asked, and the end's at 6; the ask at 5 wrote nothing.
  CHECK(WrittenSteps(dir) == std::vector<uint64_t>{3, 4, 6});
}

TEST_CASE("checkpoint: a server holds at most 64 asked versions to come") {
  ServerFixture f("async");
  auto worker0 = Connect(f);
  Reply reply;
  for (uint64_t version = 1; version <= 64; ++version)
    REQUIRE(worker0->Call(f.Header(MsgType::kCheckpoint, version, 0), {}, &reply).ok());
  const Status refused = worker0->Call(f.Header(MsgType::kCheckpoint, 65, 0), {}, &reply);
  CHECK(Contains(refused.message(),
                 "a checkpoint at version 65 while 64 asked ones are still to come (the first at 1)"));
  CHECK(worker0->Call(f.Header(MsgType::kCheckpoint, 64, 0), {}, &reply).ok());  // asked already
  CHECK(f.Stop().ok());
}

TEST_CASE("a request for another plan is refused naming both plan hashes") {
  ServerFixture f("bsp");
  auto client = Connect(f);
  Reply reply;
  const uint64_t other = f.plan.hash_value() ^ 0x5a5a;
  Status s = client->Call({MsgType::kGet, other, 0, 0}, {}, &reply);
  CHECK(s.IsInvalidArgument());
  CHECK(
      Contains(s.message(), "request for plan " + HexU64(other) + ", this server runs plan " + f.plan.hash));
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
    CHECK(s.IsInvalidArgument());
    CHECK(Contains(s.message(),
                   "sender " + std::to_string(sender) + " is not a worker of the plan (it has 2)"));
  }
  Status s = client->Call(f.Header(MsgType::kDone, 0, 2), {}, &reply);
  CHECK(Contains(s.message(), "sender 2 is not a worker of the plan"));

  // One slice missing; a slice of the wrong size; an unknown key.
  s = client->Call(f.Header(MsgType::kUpdate, 0, 0), {g.Entries()[0]}, &reply);
  CHECK(Contains(s.message(),
                 "update from worker 0 carries 1 slices of layer 'fc'; the plan gives it 2 of them "
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
  auto done0 = std::async(std::launch::async,
                          [&] { return worker0->Call(f.Header(MsgType::kDone, ~0ull, 0), {}, &reply0); });
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

  // Run returns by itself once the workers hang up (well before its 2 s idle timeout), writing a final
  // checkpoint.
  worker0.reset();
  worker1.reset();
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

TEST_CASE(
    "done: a worker ending long before another is told 'wait' while the table moves, then gets its values") {
  // Async: the other worker trains on for more than the server's timeout.
  ServerFixture f("async");
  auto worker0 = Connect(f), worker1 = Connect(f);
  Reply reply;
  const auto start = std::chrono::steady_clock::now();
  REQUIRE(worker0->Call(f.Header(MsgType::kDone, 0, 0), {}, &reply).ok());
  CHECK(reply.view().header.type == MsgType::kWait);
  CHECK(reply.view().text == "1 of 2 workers done");
  CHECK(std::chrono::steady_clock::now() - start >= milliseconds(kTimeoutMs / 2));
  // Asked again while worker 1 trains for longer than the server's timeout
  // in all: the done's repeats do not feed the server's watchdog, worker 1's
  // updates do.
  auto done0 = std::async(std::launch::async, [&] {
    Reply r;
    int waits = 0;
    Status s;
    while ((s = worker0->Call(f.Header(MsgType::kDone, 0, 0), {}, &r)).ok() &&
           r.view().header.type == MsgType::kWait)
      ++waits;
    return std::make_pair(s, waits);
  });
  for (int step = 0; step < 12; ++step) {
    REQUIRE(Update(worker1.get(), f, step, 1, MakeGrads(1, step), &reply).ok());
    std::this_thread::sleep_for(milliseconds(200));
  }
  CHECK(done0.wait_for(milliseconds(0)) == std::future_status::timeout);
  REQUIRE(worker1->Call(f.Header(MsgType::kDone, 0, 1), {}, &reply).ok());
  CHECK(reply.view().header.type == MsgType::kReply);
  const auto [done, waits] = done0.get();
  const Status s0 = done;  // INFO's lambda captures variables, not bindings (clang 14)
  INFO(s0.ToString());
  CHECK(s0.ok());
  CHECK(waits >= 1);
  worker0.reset();  // hang up, as workers do once done: the server waits for that before it closes
  worker1.reset();
  REQUIRE(f.run.wait_for(milliseconds(kTimeoutMs)) == std::future_status::ready);
  CHECK(f.run.get().ok());
}

TEST_CASE("done: asked again with no worker training, the server still gives up after its timeout") {
  ServerFixture f("async");
  auto worker0 = Connect(f, 2 * kTimeoutMs);
  Reply reply;
  Status s;
  const auto start = std::chrono::steady_clock::now();
  while ((s = worker0->Call(f.Header(MsgType::kDone, 0, 0), {}, &reply)).ok() &&
         reply.view().header.type == MsgType::kWait) {
    REQUIRE(std::chrono::steady_clock::now() - start < milliseconds(4 * kTimeoutMs));
  }
  // Its done was parked (answered "stopping") or on its way (the connection closes under it).
  INFO(s.ToString());
  CHECK(!s.ok());
  Status run = f.run.get();
  CHECK(
      Contains(run.message(), "no request from any worker for 2000 ms (at version 0, 1 of 2 workers done)"));
}

TEST_CASE("a worker that rejoins replaces what its old life left waiting: its done is taken, not refused") {
  ServerFixture f("async");
  Reply reply;
  {
    auto old = Connect(f);
    REQUIRE(old->Send(f.Header(MsgType::kDone, 0, 0), {}).ok());
    f.WaitParked(1);
  }  // incarnation 100 dies with its done parked
  const Status joined = JoinAs(f, 0, 777, &reply);
  INFO(joined.ToString());
  REQUIRE(joined.ok());
  REQUIRE(reply.view().header.type == MsgType::kReply);
  auto fresh = Connect(f);
  REQUIRE(fresh->Send({MsgType::kDone, f.plan.hash_value(), 0, 0, 777}, {}).ok());
  REQUIRE(Connect(f)->Call(f.Header(MsgType::kDone, 0, 1), {}, &reply).ok());
  REQUIRE(fresh->Receive(&reply).ok());
  CHECK(reply.view().header.type == MsgType::kReply);
  CHECK(reply.view().entries.size() == 2);
  fresh.reset();
  CHECK(f.run.get().ok());
}

TEST_CASE(
    "incarnations: a live worker's id cannot be joined again; once a new one joins, the old one is refused") {
  ServerFixture f("bsp");  // workers 0 and 1 joined as incarnations 100 and 101
  Reply reply;
  {
    // Worker 0's incarnation 100 is connected: a second process as worker 0
    // is told to wait (RemoteTable::Join gives up after a few seconds).
    auto old = Connect(f), impostor = Connect(f);
    REQUIRE(Update(old.get(), f, 0, 0, MakeGrads(0, 0), &reply).ok());
    REQUIRE(impostor->Call({MsgType::kJoin, f.plan.hash_value(), kJoinWhereTheServerIs, 0, 777}, {}, &reply)
                .ok());
    CHECK(reply.view().header.type == MsgType::kWait);
    CHECK(reply.view().text ==
          "worker 0 is running already as incarnation 0000000000000064 (still connected); "
          "refusing incarnation 0000000000000309: two processes claim to be worker 0");
  }
  // Both connections closed. A join the server cannot answer (a step it
  // does not hold) takes nothing: incarnation 100 is still worker 0.
  const Status refused = JoinAs(f, 0, 888, &reply, 5);
  CHECK(Contains(refused.message(), "worker 0 joins at step 5, which this server cannot answer"));
  {
    auto still = Connect(f);
    REQUIRE(still->Send({MsgType::kMetric, f.plan.hash_value(), 1, 0, 100}, {}, R"({"step": 1})").ok());
    Status taken = still->Receive(&reply);
    INFO(taken.ToString());
    CHECK(taken.ok());
  }
  // Incarnation 777 may join, and 100's requests are refused from then on.
  const Status joined = JoinAs(f, 0, 777, &reply);
  INFO(joined.ToString());
  REQUIRE(joined.ok());
  CHECK(reply.view().header.type == MsgType::kReply);
  CHECK(reply.view().header.step == 0);
  Status s = Update(Connect(f).get(), f, 0, 0, MakeGrads(0, 0), &reply);
  CHECK(Contains(s.message(),
                 "a request of incarnation 0000000000000064 of worker 0, which is now incarnation "
                 "0000000000000309"));
  // A worker that never joined is refused its first update.
  s = Connect(f)->Call({MsgType::kUpdate, f.plan.hash_value(), 0, 1, 555}, MakeGrads(1, 0).Entries(), &reply);
  CHECK(Contains(s.message(),
                 "incarnation 000000000000022b of worker 1, which is now incarnation 0000000000000065"));
  CHECK(f.Stop().ok());
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

TEST_CASE("a server id outside the plan is refused at Start") {
  JobConfig job;
  REQUIRE(ParseJob(TinyJob("bsp"), "tiny.yaml", &job).ok());
  Plan plan;
  REQUIRE(MakeDataParallelPlan(job, PlanOptions(), &plan).ok());
  ServerOptions options;
  options.id = 1;
  ParameterServer server(plan, options);
  Status s = server.Start();
  CHECK(s.IsInvalidArgument());
  CHECK(s.message() == "server id 1 is not in the plan (it has 1 servers)");
}

TEST_CASE("fp16 wire: halves are summed in fp32, a worker's slices come back as halves, a get takes fp32") {
  ServerFixture f("bsp", "", "updater: momentum", kOneLayer, ", wire: fp16");
  auto w0 = Connect(f), w1 = Connect(f);
  const LayerGrads g0 = MakeLayerGrads(0, 0), g1 = MakeLayerGrads(1, 0);
  Reply r0, r1;
  REQUIRE(w1->Send(f.Header(MsgType::kUpdateGet, 0, 1), g1.Entries(kFc, ValueEncoding::kF16)).ok());
  REQUIRE(w0->Call(f.Header(MsgType::kUpdateGet, 0, 0), g0.Entries(kFc, ValueEncoding::kF16), &r0).ok());
  REQUIRE(w1->Receive(&r1).ok());
  Reply get;
  REQUIRE(w0->Call(f.Header(MsgType::kGet, 1, 0), {}, &get).ok());
  const std::vector<float> w0_values = f.Initial(0);
  for (const auto& e : get.view().entries) CHECK(e.encoding == ValueEncoding::kF32);
  // The fp32 master: the mean of the gradients' halves, applied in fp32.
  std::vector<float> want(12);
  for (size_t i = 0; i < 12; ++i) {
    const float h0 = HalfToFloat(FloatToHalf(g0.slices[0][i])),
                h1 = HalfToFloat(FloatToHalf(g1.slices[0][i]));
    want[i] = w0_values[i] - kLr * ((0.0f + h0 + h1) * 0.5f);
  }
  CheckValues(EntryValues(get, 0), want);
  // The workers' copies: the master's halves.
  for (const Reply* r : {&r0, &r1}) {
    for (const auto& e : r->view().entries) CHECK(e.encoding == ValueEncoding::kF16);
    CHECK(r->view().entries[0].value_bytes() == 24);
    const std::vector<float> master = EntryValues(get, 0), halves = EntryValues(*r, 0);
    for (size_t i = 0; i < 12; ++i) CHECK(halves[i] == HalfToFloat(FloatToHalf(master[i])));
  }
  CHECK(f.Stop().ok());
}

TEST_CASE(
    "clients sharing a connection have requests in flight at once, and it outlives the one that dialled") {
  ServerFixture f("bsp");
  RpcClient undialled;
  std::unique_ptr<RpcClient> nothing;
  CHECK(undialled.Share(&nothing).IsInvalidArgument());

  auto dialled = Connect(f);
  std::unique_ptr<RpcClient> shared;
  REQUIRE(dialled->Share(&shared).ok());
  CHECK(shared->endpoint() == f.endpoint);
  // A get of version 1 waits on the server; the shared client is answered meanwhile.
  REQUIRE(dialled->Send(f.Header(MsgType::kGet, 1, 0), {}).ok());
  Reply reply;
  REQUIRE(shared->Call(f.Header(MsgType::kStats, 0, kToolSender), {}, &reply).ok());
  CHECK(reply.view().header.type == MsgType::kStats);
  dialled.reset();  // abandons its get
  REQUIRE(shared->Call(f.Header(MsgType::kGet, 0, 0), {}, &reply).ok());
  CHECK(reply.view().entries.size() == 2);
  CHECK(f.Stop().ok());
}

}  // namespace
}  // namespace shoal
