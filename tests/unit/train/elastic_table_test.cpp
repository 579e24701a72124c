// Tests for lib/train/elastic_table (easgd's worker side) against a real
// ParameterServer in this process: when a worker exchanges (every tau-th
// step, or by DeepSpark's accumulated loss) and what it does to the replica.
#include "train/elastic_table.h"

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "server_fixture.h"

namespace shoal {
namespace {

// Worker 0's params as a net would hold them (the tiny job's fc.weight and
// fc.bias, whole), and its table over the fixture's server.
struct Replica {
  std::vector<Param> params;
  std::unique_ptr<ElasticTable> table;

  explicit Replica(const ServerFixture& f) {
    for (const auto& p : f.plan.params)
      params.push_back({p.name, p.shape, p.init, p.lr_mult, Tensor(p.shape), Tensor(p.shape)});
    std::vector<Param*> held;
    for (Param& p : params) held.push_back(&p);
    auto remote = std::make_unique<RemoteTable>(f.plan, 0, held, kClientTimeoutMs, TestIncarnation(0));
    REQUIRE(remote->Connect().ok());
    table = std::make_unique<ElasticTable>(f.plan, 0, held, std::move(remote));
  }
  void SetGrads(float g) {
    for (Param& p : params) p.grad.Fill(g);
  }
  std::vector<float> Weight() const { return {params[0].value.data(), params[0].value.data() + 12}; }
};

std::vector<float> Shifted(const std::vector<float>& v, float by) {
  std::vector<float> out = v;
  for (float& x : out) x += by;
  return out;
}

void CheckNear(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-6));
  }
}

TEST_CASE("easgd: the replica starts at the centre, steps locally and exchanges after every tau-th step") {
  ServerFixture f("easgd, easgd_tau: 2, easgd_alpha: 0.5", "", "updater: sgd");
  Replica r(f);
  uint64_t step = 99;
  REQUIRE(r.table->Join(&step).ok());
  CHECK(step == 0);
  const std::vector<float> c0 = f.Initial(0);
  CheckNear(r.Weight(), c0);

  // Step 0: the local SGD step only (lr 0.1 × gradient 1), nothing sent.
  r.SetGrads(1.0f);
  REQUIRE(r.table->Push(0, 0.5).ok());
  CheckNear(r.Weight(), Shifted(c0, -0.1f));
  CHECK(f.server->stats().version == 0);

  // Step 1 ends with an exchange: x = c0 − 0.2, d = 0.5·(x − c0) = −0.1;
  // the replica takes x − d = c0 − 0.1, the centre c0 + d = c0 − 0.1.
  REQUIRE(r.table->Push(1, 0.5).ok());
  CheckNear(r.Weight(), Shifted(c0, -0.1f));
  CHECK(f.server->stats().version == 1);
  CHECK(f.server->stats().updates_from == std::vector<uint64_t>{1, 0});
  std::vector<Param> whole = r.params;
  std::vector<Param*> all = {&whole[0], &whole[1]};
  REQUIRE(r.table->FetchAll(all, 0).ok());
  CheckNear({whole[0].value.data(), whole[0].value.data() + 12}, Shifted(c0, -0.1f));

  REQUIRE(r.table->Push(2, 0.5).ok());
  CHECK(f.server->stats().version == 1);
  CHECK(f.Stop().ok());
}

TEST_CASE(
    "easgd_adaptive: a worker exchanges when its loss summed since the last exchange passes the threshold") {
  ServerFixture f("easgd, easgd_adaptive: true, easgd_loss_threshold: 1.0", "", "updater: sgd");
  Replica r(f);
  uint64_t step = 0;
  REQUIRE(r.table->Join(&step).ok());
  r.SetGrads(0.0f);
  // Sums 0.5, 1.0 (not past 1.0), 1.25 (exchange; from 0 again), 0.75, 1.25 (exchange).
  const double losses[] = {0.5, 0.5, 0.25, 0.75, 0.5};
  const uint64_t versions[] = {0, 0, 1, 1, 2};
  for (int i = 0; i < 5; ++i) {
    INFO("step " << i);
    REQUIRE(r.table->Push(i, losses[i]).ok());
    CHECK(f.server->stats().version == versions[i]);
  }
  CHECK(f.Stop().ok());
}

}  // namespace
}  // namespace shoal
