// Tests for lib/ps/server's layer-by-layer updates (what a worker sends with
// train.overlap), for fp16 on the wire, and for RpcClient's shared
// connections: two workers and the two-layer tiny job (fc: keys 0 and 1,
// fc2 on top: keys 2 and 3).
#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "comm/half.h"
#include "server_fixture.h"
#include "test_util.h"

namespace shoal {
namespace {

using std::chrono::milliseconds;

// A worker's gradients of every slice of the two-layer job, distinct per worker, step and element.
struct LayerGrads {
  std::vector<std::vector<float>> slices;  // by key
  std::vector<EntryRef> Entries(std::vector<uint32_t> keys, ValueEncoding encoding = ValueEncoding::kF32) const {
    std::vector<EntryRef> refs;
    for (uint32_t key : keys)
      refs.push_back({key, slices[key].data(), static_cast<uint32_t>(slices[key].size()), encoding});
    return refs;
  }
};

LayerGrads MakeLayerGrads(int worker, int step) {
  LayerGrads g;
  for (int count : {12, 3, 6, 2}) {
    std::vector<float> v;
    for (int i = 0; i < count; ++i) v.push_back(0.013f * (i + 1) * (worker + 1) - 0.07f * step + 0.001f * count);
    g.slices.push_back(v);
  }
  return g;
}

const std::vector<uint32_t> kFc = {0, 1}, kFc2 = {2, 3}, kBoth = {0, 1, 2, 3};

// Version 1 of `key` after one momentum step on both workers' step-0 gradients, as the server computes it.
std::vector<float> AfterOneStep(const ServerFixture& f, uint32_t key) {
  const std::vector<float> w0 = f.Initial(key);
  const LayerGrads g0 = MakeLayerGrads(0, 0), g1 = MakeLayerGrads(1, 0);
  std::vector<float> w1(w0.size());
  const size_t offset = f.plan.slices[key].offset;
  for (size_t i = 0; i < w1.size(); ++i)
    w1[i] = w0[offset + i] - kLr * ((0.0f + g0.slices[key][i] + g1.slices[key][i]) * 0.5f);
  return w1;
}

std::vector<uint32_t> KeysOf(const Reply& reply) {
  std::vector<uint32_t> keys;
  for (const auto& e : reply.view().entries) keys.push_back(e.key);
  return keys;
}

TEST_CASE("bsp, layer by layer: a layer is answered once both workers' gradients of it are in, before the layer below") {
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
  CHECK(Contains(s.message(), "update from worker 0 carries 3 slices of layer 'fc', 'fc2'; the plan gives it 4 of "
                              "them on this server (a request carries every slice it holds of each layer it touches)"));
  s = w0->Call(f.Header(MsgType::kUpdate, 0, 0), g0.Entries({2}), &reply);
  CHECK(Contains(s.message(), "carries 1 slices of layer 'fc2'; the plan gives it 2 of them"));
  s = w0->Call(f.Header(MsgType::kUpdate, 0, 0), g0.Entries({3, 2}), &reply);  // out of order
  CHECK(Contains(s.message(), "carries 2 slices of layer 'fc2'"));
  s = w0->Call(f.Header(MsgType::kUpdate, 1, 0), g0.Entries(kFc2), &reply);
  CHECK(Contains(s.message(), "update for step 1 but layer 'fc2' is at version 0"));
  CHECK(f.Stop().ok());
}

TEST_CASE("bsp, layer by layer: a layer waits for the table's version, so a checkpoint sees one version of all") {
  const std::string dir = TempDirPath();
  ServerFixture f("bsp", dir, "updater: momentum, checkpoint_every: 1", kTwoLayers);
  auto w0 = Connect(f), w1 = Connect(f);
  Reply reply;
  for (int w = 0; w < 2; ++w)
    REQUIRE((w ? w1 : w0)->Call(f.Header(MsgType::kUpdate, 0, w), MakeLayerGrads(w, 0).Entries(kFc2), &reply).ok());
  REQUIRE(w0->Call(f.Header(MsgType::kGet, 0, 0), {}, &reply).ok());
  const std::vector<float> fc2_v1 = EntryValues(reply, 2);
  CheckValues(fc2_v1, AfterOneStep(f, 2));

  // fc2 is at version 1 and takes step 1 from both, but may not apply it
  // while fc is at version 0: a get shows fc2 still at version 1.
  for (int w = 0; w < 2; ++w)
    REQUIRE((w ? w1 : w0)->Call(f.Header(MsgType::kUpdate, 1, w), MakeLayerGrads(w, 1).Entries(kFc2), &reply).ok());
  REQUIRE(w0->Call(f.Header(MsgType::kGet, 0, 0), {}, &reply).ok());
  CHECK(EntryValues(reply, 2) == fc2_v1);
  CHECK(f.server->stats().version == 0);

  // fc's step 0 makes the table's version 1 (checkpointed), and lets fc2 apply its step 1.
  for (int w = 0; w < 2; ++w)
    REQUIRE((w ? w1 : w0)->Call(f.Header(MsgType::kUpdate, 0, w), MakeLayerGrads(w, 0).Entries(kFc), &reply).ok());
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

TEST_CASE("async, layer by layer: each layer applies as it comes; a worker's step counts once its every layer is in") {
  ServerFixture f("async", "", "updater: sgd", kTwoLayers);
  auto w0 = Connect(f);
  const LayerGrads g0 = MakeLayerGrads(0, 0);
  Reply reply;
  // fc2 alone: applied and answered at once, a step of its own.
  REQUIRE(w0->Call(f.Header(MsgType::kUpdateGet, 0, 0), g0.Entries(kFc2), &reply).ok());
  CHECK(KeysOf(reply) == kFc2);
  CHECK(reply.view().header.step == 1);  // fc2's version
  const std::vector<float> w = f.Initial(2);
  std::vector<float> want(6);
  for (size_t i = 0; i < 6; ++i) want[i] = w[f.plan.slices[2].offset + i] - kLr * g0.slices[2][i];
  CheckValues(EntryValues(reply, 2), want);
  ServerStats stats = f.server->stats();
  CHECK(stats.version == 0);  // fc has taken nothing yet
  CHECK(stats.updates_from == std::vector<uint64_t>{0, 0});
  CHECK(stats.updates_applied == 0);

  // fc completes worker 0's step 0: now it counts, once.
  REQUIRE(w0->Call(f.Header(MsgType::kUpdateGet, 0, 0), g0.Entries(kFc), &reply).ok());
  stats = f.server->stats();
  CHECK(stats.version == 1);
  CHECK(stats.updates_from == std::vector<uint64_t>{1, 0});
  CHECK(stats.updates_applied == 1);
  CHECK(stats.updates_received == 2);
  // A repeat of either layer is dropped.
  REQUIRE(w0->Call(f.Header(MsgType::kUpdateGet, 0, 0), g0.Entries(kFc2), &reply).ok());
  CHECK(f.server->stats().updates_repeated == 1);
  CHECK(f.server->stats().updates_from == std::vector<uint64_t>{1, 0});
  CHECK(f.Stop().ok());
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
    const float h0 = HalfToFloat(FloatToHalf(g0.slices[0][i])), h1 = HalfToFloat(FloatToHalf(g1.slices[0][i]));
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

TEST_CASE("clients sharing a connection have requests in flight at once, and it outlives the one that dialled") {
  ServerFixture f("bsp");
  RpcClient undialled;
  std::unique_ptr<RpcClient> nothing;
  CHECK(undialled.Share(&nothing).code() == Status::Code::kInvalidArgument);

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
