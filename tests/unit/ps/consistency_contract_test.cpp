// The contract every consistency model keeps (lib/ps/consistency.h), held
// over bsp, async, ssp and easgd through a live server over inproc://: a
// worker's step counts once however often a rejoined worker repeats it; a
// join answers the step the worker trains next; a request of an old
// incarnation, or of no worker of the plan, is refused and changes nothing;
// done is answered once every worker is done, with the final values, and
// the server then stops well; a checkpoint resumes to the same values; and a
// server nobody talks to gives up after the plan's timeout.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "server_fixture.h"
#include "test_util.h"

namespace shoal {
namespace {

// Each model as the job names it, with the fields it requires.
const char* const kModels[] = {"bsp", "async", "ssp, staleness: 1", "easgd, easgd_alpha: 0.5"};

bool Elastic(const ServerFixture& f) { return f.plan.job.cluster.consistency == ConsistencyModel::kEasgd; }

// Worker `w`'s contribution to `step`: its gradients, or (easgd) its replica's values.
Status Contribute(const ServerFixture& f, RpcClient* client, uint32_t w, uint64_t step, Reply* reply) {
  const Grads g = MakeGrads(static_cast<int>(w), static_cast<int>(step));
  const MsgType type = Elastic(f) ? MsgType::kExchange : MsgType::kUpdate;
  return client->Call(f.Header(type, step, w), g.Entries(), reply);
}

std::vector<float> Values(const ServerFixture& f, RpcClient* client) {
  Reply reply;
  REQUIRE(client->Call(f.Header(MsgType::kGet, 0, kToolSender), {}, &reply).ok());
  return EntryValues(reply, 0);
}

TEST_CASE("every consistency model counts a repeated step once, and a join answers the next step") {
  for (const char* model : kModels) {
    INFO(model);
    ServerFixture f(model);
    auto w0 = Connect(f), w1 = Connect(f), tool = Connect(f);
    Reply reply;
    REQUIRE(Contribute(f, w0.get(), 0, 0, &reply).ok());
    REQUIRE(Contribute(f, w1.get(), 1, 0, &reply).ok());
    const std::vector<float> after = Values(f, tool.get());
    const ServerStats before = f.server->stats();
    CHECK(before.updates_from == std::vector<uint64_t>{1, 1});
    // Worker 0 rejoins, hears it trains step 1 next, and repeats step 0.
    REQUIRE(w0->Call(f.Header(MsgType::kJoin, kJoinWhereTheServerIs, 0), {}, &reply).ok());
    CHECK(reply.view().header.step == 1);
    REQUIRE(Contribute(f, w0.get(), 0, 0, &reply).ok());
    const ServerStats repeated = f.server->stats();
    CHECK(repeated.version == before.version);
    CHECK(repeated.updates_from == before.updates_from);
    CHECK(repeated.updates_repeated == before.updates_repeated + 1);
    CHECK(Values(f, tool.get()) == after);
    CHECK(f.Stop().ok());
  }
}

TEST_CASE("every consistency model refuses an old incarnation and a sender outside the plan") {
  for (const char* model : kModels) {
    INFO(model);
    ServerFixture f(model);
    auto client = Connect(f), tool = Connect(f);
    const std::vector<float> before = Values(f, tool.get());
    const Grads g = MakeGrads(0, 0);
    const MsgType type = Elastic(f) ? MsgType::kExchange : MsgType::kUpdate;
    MsgHeader old = f.Header(type, 0, 0);
    old.incarnation = 7;
    Reply reply;
    Status s = client->Call(old, g.Entries(), &reply);
    CHECK(s.IsInvalidArgument());
    CHECK(Contains(s.message(), "a request of incarnation 0000000000000007 of worker 0"));
    s = client->Call(f.Header(type, 0, 5), g.Entries(), &reply);
    CHECK(s.IsInvalidArgument());
    CHECK(Contains(s.message(), "sender 5 is not a worker of the plan (it has 2)"));
    CHECK(Values(f, tool.get()) == before);
    CHECK(f.server->stats().updates_from == std::vector<uint64_t>{0, 0});
    CHECK(f.Stop().ok());
  }
}

TEST_CASE("under every consistency model done waits for every worker, answers the final values, and stops") {
  for (const char* model : kModels) {
    INFO(model);
    ServerFixture f(model);
    auto w0 = Connect(f), w1 = Connect(f), tool = Connect(f);
    Reply reply;
    REQUIRE(Contribute(f, w0.get(), 0, 0, &reply).ok());
    REQUIRE(Contribute(f, w1.get(), 1, 0, &reply).ok());
    const std::vector<float> final_values = Values(f, tool.get());
    REQUIRE(w0->Send(f.Header(MsgType::kDone, 0, 0), {}).ok());
    f.WaitParked(1);  // worker 0's done waits for worker 1's
    Reply done0, done1;
    REQUIRE(w1->Call(f.Header(MsgType::kDone, 0, 1), {}, &done1).ok());
    REQUIRE(w0->Receive(&done0).ok());
    CHECK(EntryValues(done0, 0) == final_values);
    CHECK(EntryValues(done1, 0) == final_values);
    w0.reset();
    w1.reset();
    tool.reset();
    CHECK(f.Stop().ok());
  }
}

TEST_CASE("every consistency model's checkpoint resumes to the values it holds") {
  for (const char* model : kModels) {
    INFO(model);
    const std::string dir = TempDirPath();
    std::vector<float> held;
    {
      ServerFixture f(model, dir);
      auto w0 = Connect(f), w1 = Connect(f), tool = Connect(f);
      Reply reply;
      REQUIRE(Contribute(f, w0.get(), 0, 0, &reply).ok());
      REQUIRE(Contribute(f, w1.get(), 1, 0, &reply).ok());
      held = Values(f, tool.get());
      tool.reset();
      CHECK(f.Stop().ok());  // a server shut down writes its final checkpoint
      ResumedServer resumed(f, dir);
      CHECK(Values(f, Connect(f).get()) == held);
      resumed.Stop();
    }
  }
}

TEST_CASE("under every consistency model a server nobody talks to gives up after the plan's timeout") {
  // The servers wait out their timeouts side by side.
  std::vector<std::unique_ptr<ServerFixture>> servers;
  for (const char* model : kModels) servers.push_back(std::make_unique<ServerFixture>(model));
  for (size_t i = 0; i < servers.size(); ++i) {
    INFO(kModels[i]);
    const Status s = servers[i]->run.get();
    CHECK(s.IsTimeout());
    CHECK(Contains(s.message(), "no request from any worker for 2000 ms"));
  }
}

}  // namespace
}  // namespace shoal
