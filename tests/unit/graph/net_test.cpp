// Tests for lib/graph/net.cpp: whole nets built from a job, checked and trained.
#include "graph/net.h"

#include <doctest/doctest.h>

#include <cmath>
#include <numeric>
#include <random>

#include "config/job.h"
#include "gradient_check.h"
#include "ps/param_init.h"
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

// flat feeds two layers: its gradient is the sum of theirs; every other
// source has one consumer, which sets its gradient.
const char* kBranchingNet = R"(
model:
  layers:
    - {name: data, type: data, shape: [1, 6, 6]}
    - {name: conv, type: convolution, srclayers: data, num_output: 2, kernel: 3, stride: 1, pad: 1}
    - {name: relu, type: relu, srclayers: conv}
    - {name: pool, type: pooling, srclayers: relu, kernel: 2}
    - {name: flat, type: flatten, srclayers: pool}
    - {name: left, type: fully_connected, srclayers: flat, num_output: 3}
    - {name: right, type: fully_connected, srclayers: flat, num_output: 3}
    - {name: both, type: concat, srclayers: [left, right]}
    - {name: fc, type: fully_connected, srclayers: both, num_output: 3}
    - {name: loss, type: softmax_loss, srclayers: [fc, data]}
)";

TEST_CASE("a sole consumer sets its source's gradient, others add into a cleared one: both as if all added") {
  auto net = BuildNet(kBranchingNet, 4);
  FillBatch(net.get());
  auto param_grads = [&] {
    std::vector<std::vector<float>> grads;
    for (Param* p : net->params()) grads.emplace_back(p->grad.data(), p->grad.data() + p->grad.size());
    return grads;
  };
  // The net as planned, every feature gradient holding garbage beforehand:
  // the ones set are overwritten, the ones summed into are cleared by the net.
  net->Forward(Phase::kTrain);
  for (const auto& layer : net->layers()) layer->grad().Fill(std::nanf(""));
  net->Backward();
  const auto planned = param_grads();
  // Every consumer adding into gradients cleared beforehand (as before plans).
  for (size_t i = 0; i < net->layers().size(); ++i)
    net->layers()[i]->set_source_grad_writes(std::vector<GradWrite>(net->sources(i).size(), GradWrite::kAdd));
  for (const auto& layer : net->layers()) layer->grad().Fill(0.0f);
  net->Backward();
  const auto added = param_grads();
  REQUIRE(planned.size() == added.size());
  for (size_t p = 0; p < planned.size(); ++p)
    for (size_t i = 0; i < planned[p].size(); ++i) {
      CAPTURE(net->params()[p]->name);
      CAPTURE(i);
      REQUIRE(std::isfinite(planned[p][i]));
      CHECK(planned[p][i] == doctest::Approx(added[p][i]).epsilon(1e-6));
    }
}

TEST_CASE("PlanGradWrites sets a gradient where its source has one consumer that can, and clears the rest") {
  auto net = BuildNet(kBranchingNet, 2);
  std::vector<Layer*> layers;
  std::vector<std::vector<Layer*>> srcs;
  for (size_t i = 0; i < net->layers().size(); ++i) {
    layers.push_back(net->layers()[i].get());
    srcs.push_back(net->sources(i));
  }
  std::vector<std::string> cleared;
  for (Layer* layer : PlanGradWrites(layers, srcs)) cleared.push_back(layer->name());
  // conv, relu, pool: one consumer each that sets; flat: two; left, right:
  // one each, concat, which sets; both: fc sets it; fc: the loss adds; loss:
  // no consumer.
  CHECK(cleared == std::vector<std::string>{"flat", "fc", "loss"});
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

// A char-RNN (SINGA §4.2.3): symbol ids, embedded, a GRU over the window,
// each step's scores over the vocabulary, the next symbol's cross-entropy.
const char* kCharRnn = R"(
model:
  layers:
    - {name: data, type: data, shape: [9]}
    - {name: embed, type: embedding, srclayers: data, vocab: 5, num_output: 4, steps: 8}
    - {name: gru, type: gru, srclayers: embed, num_output: 8}
    - {name: out, type: fully_connected, srclayers: gru, num_output: 5, axis: 1}
    - {name: loss, type: softmax_loss, srclayers: [out, data]}
)";

TEST_CASE(
    "a char-RNN's gradients, through the GRU's steps and the shared output layer, match central "
    "differences") {
  auto net = BuildNet(kCharRnn, 2);
  const float windows[2][9] = {{0, 1, 2, 3, 4, 0, 1, 2, 3}, {3, 1, 4, 1, 0, 2, 2, 4, 1}};
  std::copy(&windows[0][0], &windows[0][0] + 18, net->data_layer().data().data());
  for (Param* p : net->params()) FillUniform(&p->value, static_cast<uint32_t>(p->value.size()), 0.5f);
  auto objective = [&] {
    net->Forward(Phase::kTrain);
    return static_cast<double>(net->loss_layer().loss());
  };
  auto backward = [&] {
    net->Forward(Phase::kTrain);
    net->Backward();
  };
  std::vector<Variable> vars;
  for (Param* p : net->params()) vars.push_back({p->name, &p->value, &p->grad});
  CheckGradients(objective, backward, vars);
  CHECK(net->loss_layer().predictions_per_record() == 8);
}

TEST_CASE("a char-RNN learns a sequence whose next symbol needs the one before last (BPTT)") {
  // a, 0, a+1, 0, a+2, ... (mod 4, in 1..4) from a random a: after a 0 comes
  // the symbol before it plus one. Without a state carried over a step (a
  // bigram's best) those steps cost ln 4 each, 0.69 a step on average.
  auto net = BuildNet(kCharRnn, 16);
  for (Param* p : net->params()) {  // as the servers would start them
    std::vector<float> values;
    InitializeParam(p->name, p->shape, p->init, 1, &values);
    std::copy(values.begin(), values.end(), p->value.data());
  }
  std::mt19937 rng(3);
  auto fill = [&] {
    float* x = net->data_layer().data().data();
    for (int r = 0; r < 16; ++r) {
      int a = static_cast<int>(rng() % 4);
      for (int t = 0; t < 9; ++t) x[r * 9 + t] = t % 2 == 1 ? 0.0f : static_cast<float>((a + t / 2) % 4 + 1);
    }
  };
  UpdaterConfig updater;
  updater.rule = UpdateRule::kAdam;
  updater.learning_rate = 0.02;
  std::vector<UpdaterState> state;
  for (Param* p : net->params()) state.push_back(NewUpdaterState(updater, p->value.size()));
  std::vector<float> losses;
  for (int step = 0; step < 300; ++step) {
    fill();
    net->Forward(Phase::kTrain);
    losses.push_back(net->loss_layer().loss());
    net->Backward();
    auto params = net->params();
    for (size_t k = 0; k < params.size(); ++k)
      ApplyUpdate(updater, step, params[k]->value.size(), params[k]->grad.data(), params[k]->value.data(),
                  &state[k]);
  }
  const double last = std::accumulate(losses.end() - 20, losses.end(), 0.0) / 20;
  INFO("first loss " << losses.front() << ", last 20 steps' " << last);
  CHECK(losses.front() > 1.4);  // about ln 5 untrained
  CHECK(last < 0.2);
}

}  // namespace
}  // namespace shoal
