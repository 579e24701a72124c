// Tests for lib/ps/bsp (through a ParameterServer over inproc://): a step is
// summed until every worker holding a layer has sent it, applied once, and
// reads wait for the version they need; layer by layer with train.overlap.
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
  CHECK(s.IsTimeout());
  CHECK(s.message() == "server '" + f.endpoint + "' did not answer 'get' (step 1) within 1200 ms");

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
  for (int i = 0; i < 12; ++i)
    w2[i] = w1[i] - kLr * (kMomentum * v_w[i] + (h0.weight[i] + h1.weight[i]) * 0.5f);
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
  CHECK(s.IsTimeout());
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
  CHECK(s.IsInvalidArgument());
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

TEST_CASE(
    "bsp, layer by layer: a layer is answered once both workers' gradients of it are in, before the layer "
    "below") {
  ServerFixture f("bsp", "", "updater: momentum", kTwoLayers);
  auto w0 = Connect(f), w1 = Connect(f);
  std::unique_ptr<RpcClient> w0_fc, w1_fc;  // a request per layer in flight at once, as RemoteTable's lanes
  REQUIRE(w0->Share(&w0_fc).ok());
  REQUIRE(w1->Share(&w1_fc).ok());
  const LayerGrads g0 = MakeLayerGrads(0, 0), g1 = MakeLayerGrads(1, 0);

  // Backprop's order: the top layer first. Its answers come while the layer
  // below is still being computed.
  REQUIRE(w0->Send(f.Header(MsgType::kUpdateGet, 0, 0), g0.Entries(kFc2)).ok());
  REQUIRE(w1->Send(f.Header(MsgType::kUpdateGet, 0, 1), g1.Entries(kFc2)).ok());
  Reply r0, r1;
  REQUIRE(w0->Receive(&r0).ok());
  REQUIRE(w1->Receive(&r1).ok());
  for (const Reply* r : {&r0, &r1}) {
    CHECK(r->view().header.step == 1);
    CHECK(KeysOf(*r) == kFc2);  // only the layer sent
  }
  CheckValues(EntryValues(r0, 2), AfterOneStep(f, 2));
  CheckValues(EntryValues(r1, 3), AfterOneStep(f, 3));
  CHECK(f.server->stats().version == 0);  // fc is still at version 0
  CHECK(f.server->stats().updates_applied == 0);

  // The layer below, worker 1 first: summed in worker order all the same.
  REQUIRE(w1_fc->Send(f.Header(MsgType::kUpdateGet, 0, 1), g1.Entries(kFc)).ok());
  REQUIRE(w0_fc->Send(f.Header(MsgType::kUpdateGet, 0, 0), g0.Entries(kFc)).ok());
  REQUIRE(w1_fc->Receive(&r1).ok());
  REQUIRE(w0_fc->Receive(&r0).ok());
  CHECK(KeysOf(r0) == kFc);
  CheckValues(EntryValues(r0, 0), AfterOneStep(f, 0));
  CHECK(EntryValues(r0, 1) == EntryValues(r1, 1));
  ServerStats stats = f.server->stats();
  CHECK(stats.version == 1);
  CHECK(stats.updates_applied == 1);
  CHECK(stats.updates_received == 4);

  // Layer by layer gives what whole updates give, to the bit.
  ServerFixture whole("bsp", "", "updater: momentum", kTwoLayers);
  auto v0 = Connect(whole), v1 = Connect(whole);
  Reply a, b;
  REQUIRE(v1->Send(whole.Header(MsgType::kUpdateGet, 0, 1), g1.Entries(kBoth)).ok());
  REQUIRE(v0->Call(whole.Header(MsgType::kUpdateGet, 0, 0), g0.Entries(kBoth), &a).ok());
  REQUIRE(v1->Receive(&b).ok());
  CHECK(KeysOf(a) == kBoth);
  REQUIRE(w0->Call(f.Header(MsgType::kGet, 1, 0), {}, &r0).ok());
  for (uint32_t key : kBoth) CHECK(EntryValues(r0, key) == EntryValues(a, key));
  CHECK(f.Stop().ok());
  CHECK(whole.Stop().ok());
}

TEST_CASE("bsp, layer by layer: repeats are dropped per layer, and an update must carry whole layers") {
  ServerFixture f("bsp", "", "updater: momentum", kTwoLayers);
  auto w0 = Connect(f);
  const LayerGrads g0 = MakeLayerGrads(0, 0);
  Reply reply;
  REQUIRE(w0->Call(f.Header(MsgType::kUpdate, 0, 0), g0.Entries(kFc2), &reply).ok());
  REQUIRE(w0->Call(f.Header(MsgType::kUpdate, 0, 0), g0.Entries(kFc2), &reply).ok());
  ServerStats stats = f.server->stats();
  CHECK(stats.updates_received == 1);
  CHECK(stats.updates_repeated == 1);
  // A rejoined worker repeating its whole step: fc2 is dropped, fc taken in.
  REQUIRE(w0->Call(f.Header(MsgType::kUpdate, 0, 0), g0.Entries(kBoth), &reply).ok());
  stats = f.server->stats();
  CHECK(stats.updates_received == 2);
  CHECK(stats.updates_repeated == 1);
  REQUIRE(w0->Call(f.Header(MsgType::kUpdate, 0, 0), g0.Entries(kFc), &reply).ok());
  CHECK(f.server->stats().updates_repeated == 2);

  Status s = w0->Call(f.Header(MsgType::kUpdate, 0, 0), g0.Entries({1, 2, 3}), &reply);
  CHECK(Contains(s.message(),
                 "update from worker 0 carries 3 slices of layer 'fc', 'fc2'; the plan gives it 4 of "
                 "them on this server (a request carries every slice it holds of each layer it touches)"));
  s = w0->Call(f.Header(MsgType::kUpdate, 0, 0), g0.Entries({2}), &reply);
  CHECK(Contains(s.message(), "carries 1 slices of layer 'fc2'; the plan gives it 2 of them"));
  s = w0->Call(f.Header(MsgType::kUpdate, 0, 0), g0.Entries({3, 2}), &reply);  // out of order
  CHECK(Contains(s.message(), "carries 2 slices of layer 'fc2'"));
  s = w0->Call(f.Header(MsgType::kUpdate, 1, 0), g0.Entries(kFc2), &reply);
  CHECK(Contains(s.message(), "update for step 1 but layer 'fc2' is at version 0"));
  CHECK(f.Stop().ok());
}

TEST_CASE(
    "bsp, layer by layer: a layer waits for the table's version, so a checkpoint sees one version of all") {
  const std::string dir = TempDirPath();
  ServerFixture f("bsp", dir, "updater: momentum, checkpoint_every: 1", kTwoLayers);
  auto w0 = Connect(f), w1 = Connect(f);
  Reply reply;
  for (int w = 0; w < 2; ++w)
    REQUIRE((w ? w1 : w0)
                ->Call(f.Header(MsgType::kUpdate, 0, w), MakeLayerGrads(w, 0).Entries(kFc2), &reply)
                .ok());
  REQUIRE(w0->Call(f.Header(MsgType::kGet, 0, 0), {}, &reply).ok());
  const std::vector<float> fc2_v1 = EntryValues(reply, 2);
  CheckValues(fc2_v1, AfterOneStep(f, 2));

  // fc2 is at version 1 and takes step 1 from both, but may not apply it
  // while fc is at version 0: a get shows fc2 still at version 1.
  for (int w = 0; w < 2; ++w)
    REQUIRE((w ? w1 : w0)
                ->Call(f.Header(MsgType::kUpdate, 1, w), MakeLayerGrads(w, 1).Entries(kFc2), &reply)
                .ok());
  REQUIRE(w0->Call(f.Header(MsgType::kGet, 0, 0), {}, &reply).ok());
  CHECK(EntryValues(reply, 2) == fc2_v1);
  CHECK(f.server->stats().version == 0);

  // fc's step 0 makes the table's version 1 (checkpointed), and lets fc2 apply its step 1.
  for (int w = 0; w < 2; ++w)
    REQUIRE((w ? w1 : w0)
                ->Call(f.Header(MsgType::kUpdate, 0, w), MakeLayerGrads(w, 0).Entries(kFc), &reply)
                .ok());
  REQUIRE(w0->Call(f.Header(MsgType::kGet, 1, 0), {}, &reply).ok());
  CHECK(reply.view().header.step == 1);
  const std::vector<float> fc2_v2 = EntryValues(reply, 2);
  CHECK(fc2_v2 != fc2_v1);
  CHECK(f.server->stats().version == 1);
  CHECK(f.Stop().ok());
  Checkpoint ckpt;
  REQUIRE(ReadCheckpoint(CheckpointPath(dir, 0, 1), &ckpt).ok());
  for (const auto& t : ckpt.tensors)
    if (t.name == "fc2.weight") CHECK(t.data == fc2_v1);
  CHECK(ckpt.updates_from == std::vector<uint64_t>{1, 1});  // fc2 is ahead; fc says where the workers are
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "bsp: a read parked past the timeout is answered timed-out, naming the worker whose update it waited "
    "for") {
  ServerFixture f("bsp");
  auto worker0 = Connect(f);
  Reply reply;
  REQUIRE(Update(worker0.get(), f, 0, 0, MakeGrads(0, 0), &reply).ok());
  // Worker 1 never sends step 0: the server gives up at its timeout, before
  // the client's own deadline (kServerAnswersFirst later), and says why.
  const auto start = std::chrono::steady_clock::now();
  Status s = worker0->Call(f.Header(MsgType::kGet, 1, 0), {}, &reply);
  const auto waited = std::chrono::steady_clock::now() - start;
  CHECK(s.IsTimeout());
  CHECK(s.message() ==
        "server '" + f.endpoint + "' gave up on 'get' (step 1): waited " + std::to_string(kTimeoutMs) +
            " ms for version 1; the table is at 0: layer 'fc' has step 0 from 1 of its 2 workers: "
            "not from worker 1");
  CHECK(waited < milliseconds(kTimeoutMs) + RpcClient::kServerAnswersFirst);
  CHECK(f.server->stats().reads_timed_out == 1);
}

}  // namespace
}  // namespace shoal
