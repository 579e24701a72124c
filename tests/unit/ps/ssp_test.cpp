// Tests for lib/ps/ssp: the rule for when a read may be answered (a worker's
// clock within the slack of the slowest), and the model in a ParameterServer.
#include "ps/ssp.h"

#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <future>
#include <limits>
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

// The cluster fields of ssp with slack `s`, for ServerFixture.
std::string Ssp(int s) { return "ssp, staleness: " + std::to_string(s); }

TEST_CASE("the slowest clock is the least of the workers not done; with none left, nobody is waited for") {
  CHECK(SlowestClock({5, 2, 7}, {false, false, false}) == 2);
  CHECK(SlowestClock({5, 2, 7}, {false, true, false}) == 5);
  CHECK(SlowestClock({5, 2}, {true, true}) == std::numeric_limits<uint64_t>::max());
}

TEST_CASE("a read at clock c is answered exactly when the slowest clock is at least c − s") {
  // Slack 2: clock 7 needs the slowest at 5 or more.
  CHECK(!SspReadable(7, 4, 2));
  CHECK(SspReadable(7, 5, 2));
  CHECK(SspReadable(7, 9, 2));
  // Slack 0: every worker's update of every step before.
  CHECK(!SspReadable(3, 2, 0));
  CHECK(SspReadable(3, 3, 0));
  // A clock below the slack never waits (no unsigned wrap-around).
  CHECK(SspReadable(1, 0, 5));
  CHECK(SspReadable(0, 0, 0));
}

TEST_CASE(
    "staleness is the clock minus the slowest clock, and at most the slack for every read let through") {
  CHECK(SspStaleness(7, 5) == 2);
  CHECK(SspStaleness(3, 3) == 0);
  CHECK(SspStaleness(2, 9) == 0);  // the reader is the one behind
  for (uint64_t s = 0; s < 4; ++s)
    for (uint64_t clock = 0; clock < 12; ++clock)
      for (uint64_t slowest = 0; slowest < 12; ++slowest)
        if (SspReadable(clock, slowest, s)) CHECK(SspStaleness(clock, slowest) <= s);
}

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
  f.WaitParked(1);
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
  f.WaitParked(1);
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
  f.WaitParked(1);
  REQUIRE(worker0->Call(f.Header(MsgType::kUpdateGet, 1, 0), MakeGrads(0, 1).Entries(), &reply0).ok());
  CHECK(reply0.view().header.step == 3);
  CHECK(f.server->stats().ssp_waits == 1);
  REQUIRE(worker0->Call(f.Header(MsgType::kDone, 0, 0), {}, &reply0).ok());
  REQUIRE(done1.wait_for(milliseconds(kTimeoutMs)) == std::future_status::ready);
  CHECK(done1.get().ok());
  worker0.reset();  // hang up, as done workers do: the server waits for that
  worker1.reset();
  REQUIRE(f.run.wait_for(milliseconds(3000)) == std::future_status::ready);
  CHECK(f.run.get().ok());
}

TEST_CASE("ssp, layer by layer: a worker's clock moves once its step's every layer is in") {
  ServerFixture f("ssp, staleness: 0", "", "updater: momentum", kTwoLayers);
  auto w0 = Connect(f), w1 = Connect(f);
  std::unique_ptr<RpcClient> w0_fc;
  REQUIRE(w0->Share(&w0_fc).ok());
  // Worker 0's top layer reads at clock 1: both clocks are 0, so it parks,
  // and its lower layer's read too.
  REQUIRE(w0->Send(f.Header(MsgType::kUpdateGet, 0, 0), MakeLayerGrads(0, 0).Entries(kFc2)).ok());
  REQUIRE(w0_fc->Send(f.Header(MsgType::kUpdateGet, 0, 0), MakeLayerGrads(0, 0).Entries(kFc)).ok());
  Reply r0, r0_fc, r1;
  auto top = std::async(std::launch::async, [&] { return w0->Receive(&r0); });
  f.WaitParked(2);
  CHECK(top.wait_for(milliseconds(200)) == std::future_status::timeout);
  CHECK(f.server->stats().updates_from == std::vector<uint64_t>{1, 0});
  CHECK(f.server->stats().ssp_waits == 2);

  // Worker 1's fc2 alone does not move its clock; its fc does, and every read is answered.
  REQUIRE(w1->Send(f.Header(MsgType::kUpdate, 0, 1), MakeLayerGrads(1, 0).Entries(kFc2)).ok());
  REQUIRE(w1->Receive(&r1).ok());
  CHECK(top.wait_for(milliseconds(100)) == std::future_status::timeout);
  CHECK(f.server->stats().updates_from == std::vector<uint64_t>{1, 0});
  REQUIRE(w1->Call(f.Header(MsgType::kUpdate, 0, 1), MakeLayerGrads(1, 0).Entries(kFc), &r1).ok());
  REQUIRE(top.wait_for(milliseconds(kTimeoutMs)) == std::future_status::ready);
  REQUIRE(top.get().ok());
  REQUIRE(w0_fc->Receive(&r0_fc).ok());
  CHECK(KeysOf(r0) == kFc2);
  CHECK(KeysOf(r0_fc) == kFc);
  ServerStats stats = f.server->stats();
  CHECK(stats.updates_from == std::vector<uint64_t>{1, 1});
  CHECK(stats.max_staleness_served == 0);
  // With slack 0 a read sees what BSP would: both workers' step 0 in each layer.
  REQUIRE(w1->Call(f.Header(MsgType::kGet, 0, 1), {}, &r1).ok());
  for (uint32_t key : kFc2) CHECK(EntryValues(r0, key) == EntryValues(r1, key));
  for (uint32_t key : kFc) CHECK(EntryValues(r0_fc, key) == EntryValues(r1, key));
  CHECK(f.Stop().ok());
}

TEST_CASE(
    "ssp: a read parked past the timeout is answered timed-out, naming the workers behind and their clocks") {
  ServerFixture f(Ssp(1));
  auto fast = Connect(f);
  Reply reply;
  // Steps 0 and 1 read at clocks 1 and 2; worker 1, at clock 0, never moves.
  REQUIRE(fast->Call(f.Header(MsgType::kUpdateGet, 0, 0), MakeGrads(0, 0).Entries(), &reply).ok());
  Status s = fast->Call(f.Header(MsgType::kUpdateGet, 1, 0), MakeGrads(0, 1).Entries(), &reply);
  CHECK(s.IsTimeout());
  CHECK(s.message() ==
        "server '" + f.endpoint + "' gave up on 'update-get' (step 1): waited " + std::to_string(kTimeoutMs) +
            " ms for version 2; the table is at 2: a read at clock 2 with staleness 1 needs every "
            "worker's clock at 1 or more: worker 1 at 0");
}

}  // namespace
}  // namespace shoal
