// Tests for lib/net/connection_layer over real GroupChannels (inproc://, two
// ranks on two threads): a feature moved from the placement its source holds
// to the one its consumer needs, forward, and its gradient summed back.
#include "net/connection_layer.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "comm/group_channel.h"
#include "net/placement.h"
#include "test_util.h"

namespace shoal {
namespace {

constexpr int kGroupTimeoutMs = 2000;
constexpr int kM = 2;

// A source layer that only holds a feature: what the connection reads
// forward and adds gradients into backward.
class SourceLayer : public Layer {
 public:
  SourceLayer(const std::string& name, Shape shape) {
    Init(name, "source");
    out_shape_ = std::move(shape);
  }
  Status Setup(const Fields&, const std::vector<const Layer*>&) override { return Status::Ok(); }
  void Forward(Phase, const std::vector<Layer*>&) override {}
  void Backward(const std::vector<Layer*>&) override {}
};

Placement Rows() { return Placement(); }
Placement One(int rank) {
  Placement p;
  p.kind = Placement::Kind::kOne;
  p.rank = rank;
  return p;
}
Placement Replicated() {
  Placement p;
  p.kind = Placement::Kind::kReplicated;
  return p;
}

std::vector<std::string> Endpoints() {
  static std::atomic<int> next{0};
  const std::string base = "inproc://connection-test-" + std::to_string(next++);
  return {base + "-0", base + "-1"};
}

// The feature, and the gradient each rank's consumer hands back: distinct
// integers, so sums are exact in float.
float Feature(size_t rec, size_t f) { return static_cast<float>(100 * rec + f + 1); }
float Grad(int rank, size_t rec, size_t f) { return static_cast<float>(10000 * (rank + 1) + 100 * rec + f); }

// The values of `fn` over block `b`, row-major.
std::vector<float> Over(const Block& b, const std::function<float(size_t, size_t)>& fn) {
  std::vector<float> v;
  for (size_t rec = b.records.begin; rec < b.records.end; ++rec)
    for (size_t f = b.floats.begin; f < b.floats.end; ++f) v.push_back(fn(rec, f));
  return v;
}

struct RankResult {
  Status forward, backward;
  std::vector<float> data;         // what the connection gives the consumer
  std::vector<float> source_grad;  // what came back into the source
  Shape out_shape;
  uint64_t bytes_in = 0, bytes_out = 0;
  std::string describe;
};

// Both ranks of a group of 2 run one connection from `held` to `needed`
// (a record of `full` floats, `batch` records per rank) for step `step`.
struct Group {
  Placement held, needed;
  Shape full;
  int batch;
  bool wants_grad = true;
  GroupChannel channels[kM];
  RankResult results[kM];

  Group(Placement h, Placement n, Shape f, int b, bool grad = true)
      : held(std::move(h)), needed(std::move(n)), full(std::move(f)), batch(b), wants_grad(grad) {
    const std::vector<std::string> endpoints = Endpoints();
    for (int r = 0; r < kM; ++r) {
      GroupPeers peers;
      peers.endpoints = endpoints;
      peers.first_worker = 0;
      peers.rank = r;
      peers.plan_hash = 0xfeed;
      peers.timeout_ms = kGroupTimeoutMs;
      peers.max_block_floats = 1 << 16;
      Status s = channels[r].Open(peers);
      INFO(s.ToString());
      REQUIRE(s.ok());
    }
  }

  void RunRank(int r, int steps) {
    const size_t floats = NumElements(full);
    RankResult& out = results[r];
    ConnectionLayer connection(&channels[r], 0, "src", "dst", held, needed, full, wants_grad);
    connection.set_batch(batch);
    const Block mine = BlockAt(held, r, kM, batch, floats), wanted = BlockAt(needed, r, kM, batch, floats);
    out.out_shape = connection.out_shape();
    connection.Allocate(static_cast<int>(wanted.records.size()));
    SourceLayer source("src", ShapeAt(held, r, full));
    source.Allocate(static_cast<int>(mine.records.size()));
    std::vector<Layer*> srcs;
    if (!mine.empty()) srcs.push_back(&source);
    for (int step = 0; step < steps; ++step) {
      connection.set_step(step);
      // Each step's feature and gradient differ by the step, so a block of
      // another step would show.
      const std::vector<float> feature =
          Over(mine, [&](size_t rec, size_t f) { return Feature(rec, f) + step; });
      std::copy(feature.begin(), feature.end(), source.data().data());
      source.grad().Fill(0.0f);
      connection.Forward(Phase::kTrain, srcs);
      out.forward = connection.status();
      if (!out.forward.ok()) return;
      out.data.assign(connection.data().data(), connection.data().data() + connection.data().size());
      const std::vector<float> grad =
          Over(wanted, [&](size_t rec, size_t f) { return Grad(r, rec, f) + step; });
      std::copy(grad.begin(), grad.end(), connection.grad().data());
      connection.Backward(srcs);
      out.backward = connection.status();
      if (!out.backward.ok()) return;
      out.source_grad.assign(source.grad().data(), source.grad().data() + source.grad().size());
    }
    out.bytes_in = connection.bytes_in();
    out.bytes_out = connection.bytes_out();
    out.describe = connection.Describe();
  }

  // Runs both ranks on threads; every receive gives up after 2 s.
  void Run(int steps = 1) {
    auto rank0 = std::async(std::launch::async, [&] { RunRank(0, steps); });
    auto rank1 = std::async(std::launch::async, [&] { RunRank(1, steps); });
    REQUIRE(rank0.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
    REQUIRE(rank1.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
    rank0.get();
    rank1.get();
    for (int r = 0; r < kM; ++r) {
      INFO("rank " << r << ": " << results[r].forward.ToString() << " / " << results[r].backward.ToString());
      REQUIRE(results[r].forward.ok());
      REQUIRE(results[r].backward.ok());
    }
  }

  // What rank r needs, as the consumer sees it (the last step's).
  std::vector<float> WantFeature(int r, int step = 0) const {
    return Over(BlockAt(needed, r, kM, batch, NumElements(full)),
                [&](size_t rec, size_t f) { return Feature(rec, f) + step; });
  }
};

void CheckEqual(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == want[i]);
  }
}

TEST_CASE("rows -> replicated: every rank gets the group's records; gradients of both ranks sum back") {
  // 2 records per rank, 3 floats per record.
  Group g(Rows(), Replicated(), {3}, 2);
  g.Run();
  for (int r = 0; r < kM; ++r) {
    INFO("rank " << r);
    CHECK(g.results[r].out_shape == Shape{3});
    CheckEqual(g.results[r].data, g.WantFeature(r));
    // Rank r's records' gradient: rank 0's consumer's plus rank 1's.
    const Block mine{{static_cast<size_t>(2 * r), static_cast<size_t>(2 * r + 2)}, {0, 3}};
    CheckEqual(g.results[r].source_grad,
               Over(mine, [](size_t rec, size_t f) { return Grad(0, rec, f) + Grad(1, rec, f); }));
    // In: the other's 2×3 floats; out: their gradient.
    CHECK(g.results[r].bytes_in == 24);
    CHECK(g.results[r].bytes_out == 24);
    CHECK(g.results[r].describe == "concat: src (rows) -> dst (replicated)");
  }
}

TEST_CASE(
    "columns -> rows: each rank assembles its records from both ranks' ranges; gradients go back unsummed") {
  // 5 floats split 2 | 3; 3 records per rank.
  const Placement columns = SplitColumns({5}, 2);
  Group g(columns, Rows(), {5}, 3);
  g.Run();
  for (int r = 0; r < kM; ++r) {
    INFO("rank " << r);
    CHECK(g.results[r].out_shape == Shape{5});
    CheckEqual(g.results[r].data, g.WantFeature(r));
    // The source holds all 6 records × its range; each float's gradient comes
    // from the one rank whose records it is.
    const Block mine{{0, 6}, columns.columns[r]};
    CheckEqual(g.results[r].source_grad,
               Over(mine, [](size_t rec, size_t f) { return Grad(static_cast<int>(rec / 3), rec, f); }));
    CHECK(g.results[r].describe == "concat: src (columns) -> dst (rows)");
  }
  // Rank 0 receives records 0..3 × floats 2..5 from rank 1 (9 floats);
  // rank 1 receives records 3..6 × floats 0..2 from rank 0 (6 floats).
  CHECK(g.results[0].bytes_in == 36);
  CHECK(g.results[0].bytes_out == 36);
  CHECK(g.results[1].bytes_in == 24);
  CHECK(g.results[1].bytes_out == 24);
}

TEST_CASE("rows -> columns: each rank gets its range of every record; gradients land on the rows' owners") {
  const Placement columns = SplitColumns({4, 2}, 2);  // 2 channels of 2 floats each
  Group g(Rows(), columns, {4, 2}, 2);
  g.Run();
  for (int r = 0; r < kM; ++r) {
    INFO("rank " << r);
    CHECK(g.results[r].out_shape == Shape{2, 2});
    CheckEqual(g.results[r].data, g.WantFeature(r));
    // Rank r's records, every float: the gradient of the rank whose range it is.
    const Block mine{{static_cast<size_t>(2 * r), static_cast<size_t>(2 * r + 2)}, {0, 8}};
    CheckEqual(g.results[r].source_grad,
               Over(mine, [](size_t rec, size_t f) { return Grad(static_cast<int>(f / 4), rec, f); }));
    // The other rank's 2 records × its 4 floats, each way.
    CHECK(g.results[r].bytes_in == 32);
    CHECK(g.results[r].bytes_out == 32);
  }
}

TEST_CASE("one -> replicated: the holder sends everything; the other holds nothing and sends nothing") {
  Group g(One(1), Replicated(), {3}, 2);
  g.Run();
  for (int r = 0; r < kM; ++r) {
    INFO("rank " << r);
    CheckEqual(g.results[r].data, g.WantFeature(r));
    CHECK(g.results[r].describe == "bridge: src (rank 1) -> dst (replicated)");
  }
  // Rank 1 holds all 4 records: its gradient is both consumers' summed.
  CheckEqual(g.results[1].source_grad, Over(Block{{0, 4}, {0, 3}}, [](size_t rec, size_t f) {
               return Grad(0, rec, f) + Grad(1, rec, f);
             }));
  CHECK(g.results[0].source_grad.empty());
  CHECK(g.results[0].bytes_in == 48);
  CHECK(g.results[0].bytes_out == 48);
  CHECK(g.results[1].bytes_in == 0);
  CHECK(g.results[1].bytes_out == 0);
}

TEST_CASE("columns -> one: the rank that needs everything gathers it; the other's consumer gets no records") {
  const Placement columns = SplitColumns({3}, 2);  // 1 | 2
  Group g(columns, One(0), {3}, 2);
  g.Run();
  CHECK(g.results[0].data.size() == 12);
  CheckEqual(g.results[0].data, g.WantFeature(0));
  CHECK(g.results[1].data.empty());
  // All 4 records × rank 1's 2 floats travel to rank 0, and their gradient back.
  CHECK(g.results[0].bytes_in == 32);
  CHECK(g.results[1].bytes_out == 0);
  CHECK(g.results[1].bytes_in == 0);
  CHECK(g.results[0].bytes_out == 32);
  for (int r = 0; r < kM; ++r) {
    INFO("rank " << r);
    const Block mine{{0, 4}, columns.columns[r]};
    CheckEqual(g.results[r].source_grad, Over(mine, [](size_t rec, size_t f) { return Grad(0, rec, f); }));
  }
}

TEST_CASE("a connection whose source wants no gradient moves features only") {
  Group g(Rows(), Replicated(), {2}, 2, /*grad=*/false);
  g.Run();
  for (int r = 0; r < kM; ++r) {
    INFO("rank " << r);
    CheckEqual(g.results[r].data, g.WantFeature(r));
    CHECK(g.results[r].bytes_in == 16);
    CHECK(g.results[r].bytes_out == 0);
    // The source's gradient is left as it was (cleared by the test).
    for (float v : g.results[r].source_grad) CHECK(v == 0.0f);
  }
}

TEST_CASE("over several steps each step's blocks are matched to that step, and the byte counts add up") {
  Group g(Rows(), Replicated(), {3}, 2);
  g.Run(3);
  for (int r = 0; r < kM; ++r) {
    INFO("rank " << r);
    CheckEqual(g.results[r].data, g.WantFeature(r, 2));
    const Block mine{{static_cast<size_t>(2 * r), static_cast<size_t>(2 * r + 2)}, {0, 3}};
    CheckEqual(g.results[r].source_grad,
               Over(mine, [](size_t rec, size_t f) { return Grad(0, rec, f) + Grad(1, rec, f) + 4; }));
    CHECK(g.results[r].bytes_in == 3 * 24);
    CHECK(g.results[r].bytes_out == 3 * 24);
  }
}

TEST_CASE("a connection whose peer never sends fails its pass naming the layer, the step and the peer") {
  const std::vector<std::string> endpoints = Endpoints();
  GroupChannel channel;
  GroupPeers peers;
  peers.endpoints = endpoints;
  peers.rank = 0;
  peers.plan_hash = 1;
  peers.timeout_ms = 200;
  peers.max_block_floats = 64;
  REQUIRE(channel.Open(peers).ok());
  ConnectionLayer connection(&channel, 3, "fc1", "fc2", Rows(), Replicated(), {3}, true);
  connection.set_batch(2);
  connection.set_step(7);
  connection.Allocate(4);
  SourceLayer source("fc1", {3});
  source.Allocate(2);
  std::vector<Layer*> srcs{&source};
  const auto t0 = std::chrono::steady_clock::now();
  connection.Forward(Phase::kTrain, srcs);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const Status s = connection.status();
  CHECK(s.IsTimeout());
  CHECK(Contains(s.message(), "features of layer 'fc1' (step 7)"));
  CHECK(Contains(s.message(), "from worker 1 at '" + endpoints[1] + "'"));
  CHECK(waited >= 0.15);
  CHECK(waited < 2.0);
  // Nothing arrived: nothing counted.
  CHECK(connection.bytes_in() == 0);
}

}  // namespace
}  // namespace shoal
