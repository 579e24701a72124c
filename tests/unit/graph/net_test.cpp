// Tests for lib/graph/net.cpp: whole nets built from a job, checked and trained.
#include <doctest/doctest.h>

#include "gradient_check.h"

#include "config/job.h"
#include "graph/net.h"
#include "ps/updater.h"

namespace shoal {
namespace {

// ---------------------------------------------------------------------------
// Whole nets built from a job file.

const char* kTinyCnn = R"(
model:
  layers:
    - {name: data, type: data, shape: [1, 6, 6]}
    - {name: conv, type: convolution, srclayers: data, num_output: 2, kernel: 3, stride: 1, pad: 1}
    - {name: relu, type: relu, srclayers: conv}
    - {name: pool, type: pooling, srclayers: relu, kernel: 2}
    - {name: flat, type: flatten, srclayers: pool}
    - {name: fc, type: fully_connected, srclayers: flat, num_output: 3}
    - {name: loss, type: softmax_loss, srclayers: [fc, data]}
)";

// Smooth everywhere (no ReLU, no max pool), so a whole-net check meets no kink.
const char* kSmoothNet = R"(
model:
  layers:
    - {name: data, type: data, shape: [2, 5, 5]}
    - {name: conv, type: convolution, srclayers: data, num_output: 2, kernel: 3, stride: 2, pad: 1}
    - {name: flat, type: flatten, srclayers: conv}
    - {name: fc, type: fully_connected, srclayers: flat, num_output: 3}
    - {name: loss, type: softmax_loss, srclayers: [fc, data]}
)";

std::unique_ptr<Net> BuildNet(const std::string& text, int batch) {
  JobConfig job;
  Status s = ParseJob(text, "net.yaml", &job);
  INFO(s.ToString());
  REQUIRE(s.ok());
  std::unique_ptr<Net> net;
  s = Net::Build(job, &net);
  INFO(s.ToString());
  REQUIRE(s.ok());
  net->Allocate(batch);
  return net;
}

void FillBatch(Net* net) {
  FillUniform(&net->data_layer().data(), 21, 1.0f);
  auto& labels = net->data_layer().labels();
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>(i % 3);
  uint32_t seed = 200;
  for (Param* p : net->params()) FillUniform(&p->value, seed++, 0.4f);
}

TEST_CASE("a net built from a job file orders layers and shapes features") {
  auto net = BuildNet(kTinyCnn, 4);
  std::vector<std::string> names;
  for (const auto& l : net->layers()) names.push_back(l->name());
  CHECK(names == std::vector<std::string>{"data", "conv", "relu", "pool", "flat", "fc", "loss"});
  CHECK(net->layers()[1]->out_shape() == Shape{2, 6, 6});
  CHECK(net->layers()[3]->out_shape() == Shape{2, 3, 3});
  CHECK(net->layers()[5]->data().shape() == Shape{4, 3});
  CHECK(net->params().size() == 4);
  CHECK(net->params()[0]->name == "conv.weight");
}

TEST_CASE("a whole net's parameter gradients match central differences of its loss") {
  auto net = BuildNet(kSmoothNet, 2);
  FillBatch(net.get());
  // Forward → loss → backward through every layer (Net::Backward zeroes first).
  auto objective = [&] {
    net->Forward(Phase::kTrain);
    return static_cast<double>(net->loss_layer().loss());
  };
  auto backward = [&] {
    net->Forward(Phase::kTrain);
    net->Backward();
  };
  // Backward twice: gradients must not pile up across steps.
  backward();
  std::vector<Variable> vars;
  for (Param* p : net->params()) vars.push_back({p->name, &p->value, &p->grad});
  CheckGradients(objective, backward, vars);
}

TEST_CASE("a tiny net's loss decreases over a few momentum SGD steps") {
  auto net = BuildNet(kTinyCnn, 6);
  FillBatch(net.get());
  UpdaterConfig updater;
  updater.learning_rate = 0.1;
  updater.momentum = 0.9;
  std::vector<UpdaterState> state;
  for (Param* p : net->params()) state.push_back(NewUpdaterState(updater, p->value.size()));
  std::vector<float> losses;
  for (int step = 0; step < 30; ++step) {
    net->Forward(Phase::kTrain);
    losses.push_back(net->loss_layer().loss());
    net->Backward();
    auto params = net->params();
    for (size_t k = 0; k < params.size(); ++k)
      ApplyUpdate(updater, step, params[k]->value.size(), params[k]->grad.data(), params[k]->value.data(),
                  &state[k]);
  }
  INFO("first loss " << losses.front() << ", last " << losses.back());
  CHECK(std::isfinite(losses.back()));
  CHECK(losses.back() < 0.5f * losses.front());
}

}  // namespace
}  // namespace shoal
