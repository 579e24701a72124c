// Tests for lib/train/param_table: RemoteTable against a real ParameterServer
// in this process (tests/unit/ps/server_fixture.h: bsp and async over
// inproc://) — join, push, fetch, finish, the byte counts, and train.overlap's
// lanes giving the values a whole push gives — and LocalTable's in-place updates.
#include "train/param_table.h"

#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server_fixture.h"

namespace shoal {
namespace {

// A worker's params as its net holds them (data parallel: every parameter
// whole), in the plan's order, which is also key order here (one slice each).
struct Replica {
  std::vector<Param> params;

  explicit Replica(const Plan& plan) {
    for (const auto& p : plan.params)
      params.push_back({p.name, p.shape, p.init, p.lr_mult, Tensor(p.shape), Tensor(p.shape)});
  }
  std::vector<Param*> Pointers() {
    std::vector<Param*> out;
    for (Param& p : params) out.push_back(&p);
    return out;
  }
  void SetGrads(const std::vector<std::vector<float>>& grads) {
    REQUIRE(grads.size() == params.size());
    for (size_t k = 0; k < params.size(); ++k) {
      REQUIRE(grads[k].size() == params[k].grad.size());
      std::copy(grads[k].begin(), grads[k].end(), params[k].grad.data());
    }
  }
  std::vector<float> Values(size_t k) const {
    return {params[k].value.data(), params[k].value.data() + params[k].value.size()};
  }
};

// Worker `w`'s gradients at step `step`: the one-layer job's by key.
std::vector<std::vector<float>> OneLayerGrads(int w, int step) {
  const Grads g = MakeGrads(w, step);
  return {g.weight, g.bias};
}

std::vector<float> Mean(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> m(a.size());
  for (size_t i = 0; i < a.size(); ++i) m[i] = (0.0f + a[i] + b[i]) * 0.5f;
  return m;
}

// Momentum from `w` over the averaged gradients of successive steps:
// v = momentum·v + g; w −= lr·v.
std::vector<float> Momentum(std::vector<float> w, const std::vector<std::vector<float>>& steps) {
  std::vector<float> v(w.size(), 0.0f);
  for (const auto& g : steps)
    for (size_t i = 0; i < w.size(); ++i) {
      v[i] = kMomentum * v[i] + g[i];
      w[i] -= kLr * v[i];
    }
  return w;
}

std::unique_ptr<RemoteTable> OpenTable(const ServerFixture& f, int worker, Replica& replica) {
  auto table = std::make_unique<RemoteTable>(f.plan, worker, replica.Pointers(), kClientTimeoutMs,
                                             TestIncarnation(worker));  // the life the fixture joined
  Status s = table->Connect();
  INFO(s.ToString());
  REQUIRE(s.ok());
  return table;
}

// Runs `fn` for workers 0 and 1 at once (BSP steps need both) and checks both
// ended well within a bounded wait.
template <typename Fn>
void BothWorkers(Fn fn) {
  auto w0 = std::async(std::launch::async, fn, 0);
  auto w1 = std::async(std::launch::async, fn, 1);
  REQUIRE(w0.wait_for(std::chrono::milliseconds(kClientTimeoutMs)) == std::future_status::ready);
  REQUIRE(w1.wait_for(std::chrono::milliseconds(kClientTimeoutMs)) == std::future_status::ready);
  const Status s0 = w0.get(), s1 = w1.get();
  INFO("worker 0: " << s0.ToString() << "; worker 1: " << s1.ToString());
  REQUIRE(s0.ok());
  REQUIRE(s1.ok());
}

TEST_CASE(
    "remote table, bsp: join, two pushes and finish follow the momentum rule, and the bytes are counted") {
  ServerFixture f("bsp", "", "updater: momentum, overlap: false");
  Replica r0(f.plan), r1(f.plan);
  Replica* replicas[2] = {&r0, &r1};
  std::unique_ptr<RemoteTable> tables[2] = {OpenTable(f, 0, r0), OpenTable(f, 1, r1)};
  CHECK(!tables[0]->overlaps());

  // Join: the servers' initial values, and step 0.
  for (int w = 0; w < 2; ++w) {
    uint64_t step = 99;
    Status s = tables[w]->Join(&step);
    INFO(s.ToString());
    REQUIRE(s.ok());
    CHECK(step == 0);
    CheckValues(replicas[w]->Values(0), f.Initial(0));
    CheckValues(replicas[w]->Values(1), f.Initial(1));
  }

  // Push step 0 then step 1: each fills version step + 1.
  for (int step = 0; step < 2; ++step) {
    BothWorkers([&](int w) {
      replicas[w]->SetGrads(OneLayerGrads(w, step));
      return tables[w]->Push(step, 0.5);
    });
    for (uint32_t key = 0; key < 2; ++key) {
      std::vector<std::vector<float>> means;
      for (int s = 0; s <= step; ++s) means.push_back(MeanGrads(key, s));
      const std::vector<float> want = Momentum(f.Initial(key), means);
      for (int w = 0; w < 2; ++w) {
        INFO("step " << step << ", worker " << w << ", key " << key);
        CheckValues(replicas[w]->Values(key), want);
      }
    }
  }
  CHECK(f.server->stats().version == 2);

  // 15 floats of gradients out per push; 15 values in per join and push.
  for (int w = 0; w < 2; ++w) {
    INFO("worker " << w);
    CHECK(tables[w]->bytes_sent() == 2 * 15 * 4);
    CHECK(tables[w]->bytes_received() == 3 * 15 * 4);
    CHECK(tables[w]->updates_sent() == 2);
  }

  // FetchAll fills another set of the same params with every parameter.
  Replica whole(f.plan);
  Status s = tables[0]->FetchAll(whole.Pointers(), 2);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CheckValues(whole.Values(0), r0.Values(0));
  CheckValues(whole.Values(1), r0.Values(1));

  // Finish: both say done; the final values come back.
  r0.params[0].value.Fill(0.0f);
  BothWorkers([&](int w) { return tables[w]->Finish(); });
  CheckValues(r0.Values(0), whole.Values(0));
  CHECK(f.Stop().ok());
}

TEST_CASE("remote table, async: a push is applied alone; a worker joining later gets the current values") {
  ServerFixture f("async", "", "updater: momentum, overlap: false");
  Replica r0(f.plan), r1(f.plan);
  auto t0 = OpenTable(f, 0, r0);
  uint64_t step = 99;
  REQUIRE(t0->Join(&step).ok());
  CHECK(step == 0);
  // Worker 0 alone: each push applied at once, at its full weight (2 holders / 2 workers).
  for (int s = 0; s < 2; ++s) {
    r0.SetGrads(OneLayerGrads(0, s));
    Status st = t0->Push(s, 0.5);
    INFO(st.ToString());
    REQUIRE(st.ok());
  }
  const std::vector<float> want = Momentum(f.Initial(0), {MakeGrads(0, 0).weight, MakeGrads(0, 1).weight});
  CheckValues(r0.Values(0), want);
  CHECK(f.server->stats().version == 2);

  auto t1 = OpenTable(f, 1, r1);
  REQUIRE(t1->Join(&step).ok());
  CHECK(step == 0);  // worker 1 has trained nothing yet
  CheckValues(r1.Values(0), want);
  CheckValues(r1.Values(1), r0.Values(1));

  // FetchAll of an older version answers at once with the current values.
  Replica whole(f.plan);
  REQUIRE(t1->FetchAll(whole.Pointers(), 0).ok());
  CheckValues(whole.Values(0), want);

  std::unique_ptr<RemoteTable>* tables[2] = {&t0, &t1};
  BothWorkers([&](int w) { return (*tables[w])->Finish(); });
  CHECK(f.Stop().ok());
}

TEST_CASE("remote table: a server that is not there makes join fail within the timeout, naming it") {
  JobConfig job;
  REQUIRE(ParseJob(TinyJob("bsp"), "tiny.yaml", &job).ok());
  PlanOptions options;
  options.endpoints = {UniqueEndpoint()};
  Plan plan;
  REQUIRE(MakeDataParallelPlan(job, options, &plan).ok());
  Replica r(plan);
  RemoteTable table(plan, 0, r.Pointers(), 300);
  REQUIRE(table.Connect().ok());  // dials in the background
  uint64_t step = 0;
  const auto t0 = std::chrono::steady_clock::now();
  Status s = table.Join(&step);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(s.IsTimeout());
  CHECK(Contains(s.message(), options.endpoints[0]));
  CHECK(waited < 2.5);
}

TEST_CASE(
    "remote table: a join waits until the id's old life is heard to have ended; a second live process gives "
    "up") {
  ServerFixture f("bsp");  // workers 0 and 1 joined as incarnations 100 and 101
  Reply reply;
  // Incarnation 100 of worker 0 is connected; 777 joins as worker 0 and is
  // told to wait, until 100's connection closes.
  auto old = Connect(f);
  REQUIRE(Update(old.get(), f, 0, 0, MakeGrads(0, 0), &reply).ok());
  Replica r0(f.plan);
  RemoteTable restarted(f.plan, 0, r0.Pointers(), kClientTimeoutMs, 777);
  REQUIRE(restarted.Connect().ok());
  uint64_t step = 99;
  auto joined = std::async(std::launch::async, [&] { return restarted.Join(&step); });
  CHECK(joined.wait_for(milliseconds(300)) == std::future_status::timeout);
  old.reset();
  REQUIRE(joined.wait_for(milliseconds(kClientTimeoutMs)) == std::future_status::ready);
  const Status s = joined.get();
  INFO(s.ToString());
  CHECK(s.ok());
  CHECK(step == 0);

  // Incarnation 101 of worker 1 stays connected: 555 gives up after 5 s, naming both.
  auto live = Connect(f);
  REQUIRE(Update(live.get(), f, 0, 1, MakeGrads(1, 0), &reply).ok());
  Replica r1(f.plan);
  RemoteTable impostor(f.plan, 1, r1.Pointers(), kClientTimeoutMs, 555);
  REQUIRE(impostor.Connect().ok());
  const auto t0 = std::chrono::steady_clock::now();
  const Status refused = impostor.Join(&step);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(refused.IsInvalidArgument());
  CHECK(refused.message() == "server '" + f.endpoint +
                                 "' refused 'join' for 5 s: worker 1 is running already as "
                                 "incarnation 0000000000000065 (still connected); refusing incarnation "
                                 "000000000000022b: two processes claim to be worker 1");
  CHECK(waited >= 5.0);
  CHECK(f.Stop().ok());
}

// A stand-in for a net's layer: the lanes know layers by name only.
class NamedLayer : public Layer {
 public:
  explicit NamedLayer(const std::string& name) { Init(name, "test"); }
  Status Setup(const Fields&, const std::vector<const Layer*>&) override { return Status::Ok(); }
  void Forward(Phase, const std::vector<Layer*>&) override {}
  void Backward(const std::vector<Layer*>&) override {}
};

std::vector<std::vector<float>> TwoLayerGrads(int w, int step) { return MakeLayerGrads(w, step).slices; }

// Two workers over the two-layer job for `steps` steps; with overlap, each
// layer's gradients leave as "backprop" finishes it (fc2 first) and its values
// are collected just before its next "forward" (fc first). Returns both
// workers' params after each step and the byte counts.
struct TwoLayerRun {
  std::vector<std::vector<std::vector<float>>> after_step;  // [step][key], worker 0's
  std::vector<std::vector<float>> final_worker1;
  uint64_t bytes_sent = 0, bytes_received = 0;
};

TwoLayerRun RunTwoLayers(const std::string& train, int steps) {
  ServerFixture f("bsp", "", train, kTwoLayers);
  Replica r0(f.plan), r1(f.plan);
  Replica* replicas[2] = {&r0, &r1};
  std::unique_ptr<RemoteTable> tables[2] = {OpenTable(f, 0, r0), OpenTable(f, 1, r1)};
  const bool overlap = tables[0]->overlaps();
  NamedLayer fc("fc"), fc2("fc2");
  for (int w = 0; w < 2; ++w) {
    uint64_t step = 0;
    REQUIRE(tables[w]->Join(&step).ok());
  }
  TwoLayerRun run;
  for (int step = 0; step < steps; ++step) {
    BothWorkers([&](int w) -> Status {
      RemoteTable& t = *tables[w];
      if (overlap) {  // this step's forward: each layer's values first
        SHOAL_RETURN_IF_ERROR(t.BeforeForward(fc));
        SHOAL_RETURN_IF_ERROR(t.BeforeForward(fc2));
      }
      replicas[w]->SetGrads(TwoLayerGrads(w, step));
      if (overlap) {  // backward, top down
        SHOAL_RETURN_IF_ERROR(t.AfterBackward(fc2, step));
        SHOAL_RETURN_IF_ERROR(t.AfterBackward(fc, step));
      }
      SHOAL_RETURN_IF_ERROR(t.Push(step, 0.5));
      // What the next forward pass collects, collected now to be compared.
      return t.Settle();
    });
    std::vector<std::vector<float>> values;
    for (size_t k = 0; k < 4; ++k) values.push_back(r0.Values(k));
    run.after_step.push_back(values);
  }
  for (size_t k = 0; k < 4; ++k) run.final_worker1.push_back(r1.Values(k));
  run.bytes_sent = tables[0]->bytes_sent();
  run.bytes_received = tables[0]->bytes_received();
  CHECK(tables[0]->updates_sent() == static_cast<uint64_t>(steps));
  BothWorkers([&](int w) { return tables[w]->Finish(); });
  CHECK(f.Stop().ok());
  return run;
}

TEST_CASE("remote table, overlap: the lanes give the values a whole push gives, and count the same bytes") {
  const TwoLayerRun whole = RunTwoLayers("updater: momentum, overlap: false", 2);
  const TwoLayerRun lanes = RunTwoLayers("updater: momentum, overlap: true, overlap_bucket_floats: 0", 2);
  const TwoLayerRun bucket = RunTwoLayers("updater: momentum, overlap: true", 2);  // one lane for both layers
  REQUIRE(whole.after_step.size() == 2);
  REQUIRE(lanes.after_step.size() == 2);
  REQUIRE(bucket.after_step.size() == 2);

  // The whole push against the momentum rule.
  ServerFixture reference("bsp", "", "updater: momentum", kTwoLayers);
  for (uint32_t key = 0; key < 4; ++key) {
    std::vector<std::vector<float>> means;
    for (int step = 0; step < 2; ++step)
      means.push_back(Mean(TwoLayerGrads(0, step)[key], TwoLayerGrads(1, step)[key]));
    INFO("key " << key);
    CheckValues(whole.after_step[0][key], AfterOneStep(reference, key));
    std::vector<float> w0 = reference.Initial(key);
    const size_t offset = reference.plan.slices[key].offset;
    w0 = std::vector<float>(w0.begin() + offset, w0.begin() + offset + means[0].size());
    CheckValues(whole.after_step[1][key], Momentum(w0, means));
  }
  for (int step = 0; step < 2; ++step)
    for (uint32_t key = 0; key < 4; ++key) {
      INFO("step " << step << ", key " << key);
      CheckValues(lanes.after_step[step][key], whole.after_step[step][key]);
      CheckValues(bucket.after_step[step][key], whole.after_step[step][key]);
    }
  for (uint32_t key = 0; key < 4; ++key) CheckValues(lanes.final_worker1[key], whole.final_worker1[key]);
  // 23 floats out per step; in per join and step.
  CHECK(whole.bytes_sent == 2 * 23 * 4);
  CHECK(whole.bytes_received == 3 * 23 * 4);
  CHECK(lanes.bytes_sent == whole.bytes_sent);
  CHECK(lanes.bytes_received == whole.bytes_received);
  CHECK(bucket.bytes_sent == whole.bytes_sent);
  CHECK(bucket.bytes_received == whole.bytes_received);
  CHECK(reference.Stop().ok());
}

TEST_CASE("remote table, overlap: before the layer's next forward pass its values are the pushed step's") {
  ServerFixture f("bsp", "", "updater: momentum, overlap: true, overlap_bucket_floats: 0", kTwoLayers);
  Replica r0(f.plan), r1(f.plan);
  Replica* replicas[2] = {&r0, &r1};
  std::unique_ptr<RemoteTable> tables[2] = {OpenTable(f, 0, r0), OpenTable(f, 1, r1)};
  REQUIRE(tables[0]->overlaps());
  NamedLayer fc("fc"), fc2("fc2");
  BothWorkers([&](int w) -> Status {
    uint64_t step = 0;
    SHOAL_RETURN_IF_ERROR(tables[w]->Join(&step));
    replicas[w]->SetGrads(TwoLayerGrads(w, 0));
    SHOAL_RETURN_IF_ERROR(tables[w]->AfterBackward(fc2, 0));
    SHOAL_RETURN_IF_ERROR(tables[w]->AfterBackward(fc, 0));
    return tables[w]->Push(0, 0.5);
  });
  // Push returned with the replies still on their way: the values are version 0's.
  CheckValues(r0.Values(0), f.Initial(0));
  // fc's forward collects fc's values, not fc2's.
  REQUIRE(tables[0]->BeforeForward(fc).ok());
  CheckValues(r0.Values(0), AfterOneStep(f, 0));
  CheckValues(r0.Values(1), AfterOneStep(f, 1));
  const std::vector<float> fc2_before = r0.Values(2);
  const std::vector<float> fc2_initial = f.Initial(2);
  CheckValues(fc2_before, fc2_initial);  // fc2.weight: one slice, the whole parameter
  REQUIRE(tables[0]->BeforeForward(fc2).ok());
  CheckValues(r0.Values(2), AfterOneStep(f, 2));
  CheckValues(r0.Values(3), AfterOneStep(f, 3));
  // A layer with no lane of its own (a stand-in the lanes do not know) is a no-op.
  NamedLayer relu("relu");
  CHECK(tables[0]->BeforeForward(relu).ok());
  CHECK(tables[0]->AfterBackward(relu, 1).ok());
  BothWorkers([&](int w) { return tables[w]->Finish(); });
  // Finish collected worker 1's replies too.
  CheckValues(r1.Values(2), AfterOneStep(f, 2));
  CHECK(f.Stop().ok());
}

// Worker 1 telling the server, on a connection of its own, that it is
// evaluating step 0, until the result is destroyed (which closes it).
std::unique_ptr<Keepalive> KeepWorker1Busy(const ServerFixture& f) {
  std::vector<std::unique_ptr<RpcClient>> clients;
  clients.push_back(Connect(f));
  return std::make_unique<Keepalive>(std::move(clients), f.Header(MsgType::kAlive, 0, 1), "evaluating step 0",
                                     kTimeoutMs);
}

TEST_CASE("keepalive: a read parked on a busy worker is answered busy while it says so, then times out") {
  ServerFixture f("bsp");
  auto worker0 = Connect(f, 2 * kTimeoutMs);
  auto busy = KeepWorker1Busy(f);
  // Worker 0's step 0 waits for worker 1's, which is evaluating.
  const Grads g0 = MakeGrads(0, 0);
  Reply reply;
  REQUIRE(worker0->Call(f.Header(MsgType::kUpdateGet, 0, 0), g0.Entries(), &reply).ok());
  CHECK(reply.view().header.type == MsgType::kBusy);
  CHECK(reply.view().text == "worker 1 is busy: evaluating step 0");
  worker0->Recycle(&reply);
  // Asked again once worker 1 has gone quiet: its silence is a failure again.
  busy.reset();
  const Status again = worker0->Call(f.Header(MsgType::kUpdateGet, 0, 0), g0.Entries(), &reply);
  INFO(again.ToString());
  CHECK(again.IsTimeout());
  CHECK(Contains(again.message(), "not from worker 1"));
  const ServerStats stats = f.server->stats();
  CHECK(stats.reads_busy == 1);
  CHECK(stats.updates_repeated == 1);  // the gradients asked again with are not applied twice
}

TEST_CASE(
    "keepalive: a busy worker whose connection closes is busy no more; the read parked on it times out") {
  ServerFixture f("bsp");
  auto worker0 = Connect(f, 2 * kTimeoutMs);
  auto busy = KeepWorker1Busy(f);
  const Grads g0 = MakeGrads(0, 0);
  Reply reply;
  REQUIRE(worker0->Call(f.Header(MsgType::kUpdateGet, 0, 0), g0.Entries(), &reply).ok());
  REQUIRE(reply.view().header.type == MsgType::kBusy);  // worker 1 has said it is busy
  worker0->Recycle(&reply);
  // Asked again; while it waits, worker 1 says so once more, then its
  // connection closes (as a killed process's does) within the read's timeout.
  REQUIRE(worker0->Send(f.Header(MsgType::kUpdateGet, 0, 0), g0.Entries()).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(kTimeoutMs / 2));
  busy.reset();
  const Status again = worker0->Receive(&reply);
  INFO(again.ToString());
  CHECK(again.IsTimeout());
  CHECK(Contains(again.message(), "not from worker 1"));
  CHECK(f.server->stats().reads_busy == 1);
}

TEST_CASE("local table: starts from the plan's initial values and applies the job's updater in place") {
  JobConfig job;
  REQUIRE(ParseJob(TinyJob("bsp"), "tiny.yaml", &job).ok());
  Plan plan;
  REQUIRE(MakeDataParallelPlan(job, PlanOptions(), &plan).ok());
  Replica r(plan);
  LocalTable table(plan, r.Pointers());
  std::vector<float> w0, b0;
  InitializeParam(*plan.FindParam("fc.weight"), plan.job.train.seed, &w0);
  InitializeParam(*plan.FindParam("fc.bias"), plan.job.train.seed, &b0);
  CheckValues(r.Values(0), w0);
  CheckValues(r.Values(1), b0);
  uint64_t step = 99;
  REQUIRE(table.Join(&step).ok());
  CHECK(step == 0);

  // One process's gradient, not averaged: the momentum rule on it directly.
  for (int s = 0; s < 3; ++s) {
    r.SetGrads(OneLayerGrads(0, s));
    REQUIRE(table.Push(s, 0.5).ok());
  }
  std::vector<std::vector<float>> gw, gb;
  for (int s = 0; s < 3; ++s) {
    gw.push_back(MakeGrads(0, s).weight);
    gb.push_back(MakeGrads(0, s).bias);
  }
  CheckValues(r.Values(0), Momentum(w0, gw));
  CheckValues(r.Values(1), Momentum(b0, gb));

  // FetchAll copies the latest values whatever the version asked for.
  Replica whole(plan);
  REQUIRE(table.FetchAll(whole.Pointers(), 0).ok());
  CheckValues(whole.Values(0), r.Values(0));
  CheckValues(whole.Values(1), r.Values(1));
  CHECK(table.Report("{}").ok());
  CHECK(table.Finish().ok());
}

TEST_CASE("local table: sgd takes lr × gradient each step, no velocity") {
  JobConfig job;
  REQUIRE(ParseJob(TinyJob("bsp", "updater: sgd"), "tiny.yaml", &job).ok());
  Plan plan;
  REQUIRE(MakeDataParallelPlan(job, PlanOptions(), &plan).ok());
  Replica r(plan);
  LocalTable table(plan, r.Pointers());
  std::vector<float> w = r.Values(0);
  for (int s = 0; s < 2; ++s) {
    r.SetGrads(OneLayerGrads(1, s));
    REQUIRE(table.Push(s, 0.5).ok());
    const std::vector<float> g = MakeGrads(1, s).weight;
    for (size_t i = 0; i < w.size(); ++i) w[i] -= kLr * g[i];
  }
  CheckValues(r.Values(0), w);
}

}  // namespace
}  // namespace shoal
