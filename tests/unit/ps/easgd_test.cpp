// Tests for lib/ps/easgd (through a ParameterServer over inproc://): an
// exchange pulls the centre and the worker toward each other.
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
  REQUIRE(worker0->Call(f.Header(MsgType::kJoin, kJoinWhereTheServerIs, 0), {}, &reply).ok());
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
  REQUIRE(worker0->Call(f.Header(MsgType::kJoin, kJoinWhereTheServerIs, 0), {}, &reply).ok());
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
  CHECK(Contains(
      s.message(),
      "exchange from worker 0 carries 1 slices of layer 'fc'; the plan gives it 2 of them on this server"));
  CHECK(easgd.server->stats().version == 0);
  CHECK(bsp.Stop().ok());
  CHECK(easgd.Stop().ok());
}

TEST_CASE(
    "easgd: a checkpoint holds the centre's values and no updater state; a resumed server serves them") {
  const std::string dir = TempDirPath();
  ServerFixture f("easgd", dir);
  auto worker0 = Connect(f);
  Reply reply;
  REQUIRE(worker0
              ->Call(f.Header(MsgType::kExchange, 6, 0), Replica(f.Initial(0), f.Initial(1), 0.5f).Entries(),
                     &reply)
              .ok());
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
  REQUIRE(Connect(f)->Call(f.Header(MsgType::kJoin, kJoinWhereTheServerIs, 0), {}, &reply).ok());
  CHECK(reply.view().header.step == 7);
  CheckValues(EntryValues(reply, 0), centre);
  again.Stop();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace shoal
