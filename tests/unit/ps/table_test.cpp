// Tests for lib/ps/table: a server's part of the parameter table, on its own
// (no requests, no consistency model).
#include "ps/table.h"

#include <doctest/doctest.h>

#include <vector>

#include "comm/message.h"
#include "ps/param_init.h"
#include "ps/server_config.h"
#include "server_fixture.h"

namespace shoal {
namespace {

struct TableFixture {
  Plan plan;
  ServerConfig config;
  TableFixture(const std::string& layers = kTwoLayers) {
    JobConfig job;
    REQUIRE(ParseJob(TinyJob("bsp", "updater: momentum", layers), "tiny.yaml", &job).ok());
    PlanOptions options;
    options.endpoints = {"inproc://table-test"};
    REQUIRE(MakeDataParallelPlan(job, options, &plan).ok());
    REQUIRE(MakeServerConfig(plan, 0, &config).ok());
  }
};

// A request of `keys` from `sender`, as a server would decode it.
struct Request {
  std::vector<std::vector<float>> values;
  std::vector<unsigned char> bytes;
  MessageView view;
  Request(uint32_t sender, const std::vector<std::pair<uint32_t, uint32_t>>& keys_and_counts) {
    std::vector<EntryRef> entries;
    for (const auto& [key, count] : keys_and_counts) values.emplace_back(count, 1.0f);
    for (size_t i = 0; i < keys_and_counts.size(); ++i)
      entries.push_back({keys_and_counts[i].first, values[i].data(), keys_and_counts[i].second});
    bytes.resize(EncodedSize(entries, ""));
    Encode({MsgType::kUpdate, 1, 0, sender}, entries, "", bytes.data());
    REQUIRE(Decode(bytes.data(), bytes.size(), &view).ok());
  }
};

TEST_CASE("a table starts from each parameter's initial values, cut into this server's slices") {
  TableFixture f;
  ServerTable table(f.config, true);
  REQUIRE(table.slices().size() == 4);
  for (const auto& [key, slice] : table.slices()) {
    std::vector<float> full;
    InitializeParam(*f.plan.FindParam(f.plan.slices[key].param), f.plan.job.train.seed, &full);
    CHECK(slice.value == std::vector<float>(full.begin() + slice.spec->offset,
                                            full.begin() + slice.spec->offset + slice.spec->count));
    CHECK(slice.grad_sum == std::vector<float>(slice.value.size(), 0.0f));
    CHECK(slice.state.size() == 1);  // momentum's velocity
  }
  CHECK(table.state_names() == std::vector<std::string>{"velocity"});
  ServerTable centre(f.config, false);  // easgd's: values only
  CHECK(centre.state_names().empty());
  CHECK(centre.slices().at(0).grad_sum.empty());
}

TEST_CASE("layers follow the net, each with its keys; versions and clocks start at 0") {
  TableFixture f;
  ServerTable table(f.config, true);
  REQUIRE(table.layers().size() == 2);
  CHECK(table.layers()[0].spec->name == "fc");
  CHECK(table.layers()[0].spec->keys == std::vector<uint32_t>{0, 1});
  CHECK(table.layers()[1].spec->keys == std::vector<uint32_t>{2, 3});
  CHECK(table.LayerOf(3) == 1);
  CHECK(table.version() == 0);
  CHECK(table.VersionOf({0, 1}) == 0);
  CHECK(table.NextStepOf(1) == 0);
  CHECK(table.LayersHeldBy(0) == std::vector<int>{0, 1});
  CHECK(table.LayerAhead().empty());
}

TEST_CASE(
    "a worker's clock is the least of its layers' steps taken in; the table's version is its slowest "
    "layer's") {
  TableFixture f;
  ServerTable table(f.config, true);
  table.layers()[0].version = 3;
  table.layers()[1].version = 2;
  table.layers()[0].updates_from[1] = 5;
  table.layers()[1].updates_from[1] = 4;
  CHECK(table.SlowestLayer() == 2);
  CHECK(table.VersionOf({0}) == 3);
  CHECK(table.NextStepOf(1) == 4);
  CHECK(table.NextStepOf(1, {0}) == 5);
  CHECK(table.NextStepOf(0) == 0);
  table.Advance();
  table.Advance();
  CHECK(table.version() == 2);
  CHECK(table.LayerAhead() == "layer 'fc' is at version 3, the table at 2");
  CHECK(table.MarkDone(1));
  CHECK(!table.MarkDone(1));
  CHECK(table.done_count() == 1);
}

TEST_CASE("an update must carry whole layers of the sender's slices, and slices of this table's sizes") {
  TableFixture f;
  ServerTable table(f.config, true);
  std::vector<int> layers;
  CHECK(table.CheckHeldSlices(Request(0, {{0, 12}, {1, 3}}).view, &layers).ok());
  CHECK(layers == std::vector<int>{0});
  CHECK(table.CheckHeldSlices(Request(1, {{0, 12}, {1, 3}, {2, 6}, {3, 2}}).view, &layers).ok());
  CHECK(layers == std::vector<int>{0, 1});
  // Half a layer.
  std::string why = table.CheckHeldSlices(Request(0, {{0, 12}}).view, &layers).message();
  CHECK(Contains(why, "from worker 0 carries 1 slices of layer 'fc'; the plan gives it 2"));
  // A slice of the wrong size, and one this server does not hold.
  CHECK(Contains(table.CheckHeldSlices(Request(0, {{0, 11}, {1, 3}}).view, &layers).message(),
                 "slice 0 of 11 floats does not match this server's table"));
  CHECK(Contains(table.CheckSlices(Request(0, {{9, 3}}).view).message(), "slice 9 of 3 floats"));
  // Nothing at all, from a worker that holds something here.
  CHECK(Contains(table.CheckHeldSlices(Request(0, {}).view, &layers).message(),
                 "carries no slices; the plan gives it 4"));
  Request both(0, {{0, 12}, {1, 3}, {2, 6}, {3, 2}});
  CHECK(table.EntriesOf(both.view, 1).size() == 2);
  CHECK(table.EntriesOf(both.view, 1)[0]->key == 2);
}

TEST_CASE("gradients add up in fp32, and Apply steps the updater and clears the sum") {
  TableFixture f;
  ServerTable table(f.config, true);
  Request a(0, {{0, 12}, {1, 3}}), b(1, {{0, 12}, {1, 3}});
  table.AddGradients(table.EntriesOf(a.view, 0));
  table.AddGradients(table.EntriesOf(b.view, 0));
  ServerTable::Slice& bias = table.slice(1);
  CHECK(bias.grad_sum == std::vector<float>{2.0f, 2.0f, 2.0f});
  const std::vector<float> before = bias.value;
  table.Apply(bias, 0.5f, 0);  // the mean of the two: 1.0
  for (size_t i = 0; i < before.size(); ++i) {
    CHECK(bias.value[i] == doctest::Approx(before[i] - kLr * 1.0f));
    CHECK(bias.state[0][i] == doctest::Approx(1.0f));  // the velocity after one step
  }
  CHECK(bias.grad_sum == std::vector<float>(3, 0.0f));
}

TEST_CASE(
    "a layer's lr_mult scales its parameters' steps; a frozen one (0) is held but in no layer, and no update "
    "may carry it") {
  const std::string layers =
      "    - {name: data, type: data, shape: [1, 2, 2]}\n"
      "    - {name: fc, type: fully_connected, srclayers: data, num_output: 3, lr_mult: 0}\n"
      "    - {name: fc2, type: fully_connected, srclayers: fc, num_output: 2, lr_mult: 0.5}\n"
      "    - {name: loss, type: softmax_loss, srclayers: [fc2, data]}\n";
  TableFixture f(layers);
  // The frozen layer's slices (0, 1) are held, for a join's answer, but exchanged by nobody.
  CHECK(f.config.held[0] == std::vector<uint32_t>{0, 1, 2, 3});
  CHECK(f.config.exchanged[0] == std::vector<uint32_t>{2, 3});
  ServerTable table(f.config, true);
  REQUIRE(table.layers().size() == 1);
  CHECK(table.layers()[0].spec->name == "fc2");
  CHECK(table.Frozen(1));
  CHECK_FALSE(table.Frozen(2));
  CHECK(table.LayersHeldBy(0) == std::vector<int>{0});
  CHECK(table.slice(1).grad_sum.empty());
  CHECK(table.slice(1).state.size() == 1);  // zeros, so that checkpoints keep one layout

  std::vector<int> touched;
  Request carrying_frozen(0, {{0, 12}, {1, 3}, {2, 6}, {3, 2}});
  const std::string refusal = table.CheckHeldSlices(carrying_frozen.view, &touched).message();
  INFO(refusal);
  CHECK(refusal.find("slice 0 of 'fc.weight'") != std::string::npos);
  CHECK(refusal.find("frozen (lr_mult 0)") != std::string::npos);
  Request exchanged(0, {{2, 6}, {3, 2}});
  CHECK(table.CheckHeldSlices(exchanged.view, &touched).ok());
  CHECK(touched == std::vector<int>{0});

  table.AddGradients(table.EntriesOf(exchanged.view, 0));
  const std::vector<float> halved = table.slice(3).value;
  table.Apply(table.slice(3), 1.0f, 0);
  for (size_t i = 0; i < halved.size(); ++i)
    CHECK(table.slice(3).value[i] == doctest::Approx(halved[i] - 0.5f * kLr * 1.0f));
}

TEST_CASE("Apply keeping the values before: the same new values bit for bit, the old ones kept") {
  TableFixture f;
  ServerTable in_place(f.config, true), keeping(f.config, true);
  Request a(0, {{0, 12}, {1, 3}});
  std::vector<float> before;
  for (int step = 0; step < 3; ++step) {  // the velocity carries from step to step
    in_place.AddGradients(in_place.EntriesOf(a.view, 0));
    keeping.AddGradients(keeping.EntriesOf(a.view, 0));
    const std::vector<float> old = keeping.slice(0).value;
    in_place.Apply(in_place.slice(0), 0.5f, step);
    keeping.Apply(keeping.slice(0), 0.5f, step, &before);
    CHECK(keeping.slice(0).value == in_place.slice(0).value);
    CHECK(keeping.slice(0).state == in_place.slice(0).state);
    CHECK(before == old);
    CHECK(keeping.slice(0).grad_sum == std::vector<float>(12, 0.0f));
  }
}

}  // namespace
}  // namespace shoal
