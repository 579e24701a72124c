// Tests for lib/ps/async (through a ParameterServer over inproc://): each
// update applied as it arrives, reads answered at once, repeats dropped.
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

TEST_CASE("async: an update-get is applied and answered at once with the new values") {
  ServerFixture f("async");
  auto worker0 = Connect(f), reader = Connect(f);
  Reply reply, got;
  for (uint64_t step = 0; step < 2; ++step) {
    REQUIRE(worker0
                ->Call(f.Header(MsgType::kUpdateGet, step, 0), MakeGrads(0, static_cast<int>(step)).Entries(),
                       &reply)
                .ok());
    CHECK(reply.view().header.step == step + 1);
    // The reply, written over the request as the update made its values, and
    // a get of the table afterwards carry the same bits.
    REQUIRE(reader->Call(f.Header(MsgType::kGet, 0, kToolSender), {}, &got).ok());
    for (uint32_t key : {0u, 1u}) CHECK(EntryValues(reply, key) == EntryValues(got, key));
    reader->Recycle(&got);
  }
  const std::vector<float> w0 = f.Initial(0);
  const Grads g0 = MakeGrads(0, 0), g1 = MakeGrads(0, 1);
  std::vector<float> w2(12);
  for (int i = 0; i < 12; ++i) {
    const float v = kMomentum * g0.weight[i] + g1.weight[i];
    w2[i] = w0[i] - kLr * g0.weight[i] - kLr * v;
  }
  CheckValues(EntryValues(reply, 0), w2);
  CHECK(f.server->stats().updates_applied == 2);
  CHECK(f.Stop().ok());
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

TEST_CASE(
    "async, layer by layer: each layer applies as it comes; a worker's step counts once its every layer is "
    "in") {
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

}  // namespace
}  // namespace shoal
