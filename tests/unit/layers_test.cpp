// Tests for lib/layers and lib/net: every layer type's gradients against one
// shared numerical checker (Caffe's test_gradient_check_util.hpp idea), the
// registry table, and a tiny net that learns.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "config/fields.h"
#include "config/job.h"
#include "layers/data_layer.h"
#include "layers/layer.h"
#include "layers/softmax_loss_layer.h"
#include "graph/net.h"
#include "test_util.h"
#include "ps/updater.h"

namespace shoal {
namespace {

// ---------------------------------------------------------------------------
// The shared gradient checker.

// One tensor whose gradient is checked: its values are perturbed in place and
// `grad` holds the analytic d objective / d value after `backward` ran.
struct Variable {
  std::string name;
  Tensor* value;
  Tensor* grad;
};

constexpr double kStep = 1e-3;     // central-difference step (in float32 units)
constexpr double kRelTol = 1e-2;   // float32 forward passes: ~1e-2 relative
constexpr double kAbsTol = 2e-3;   // float32 rounding of the objective / kStep

struct GradientReport {
  size_t checked = 0;     // elements compared
  size_t mismatches = 0;  // elements outside tolerance
  size_t nonzero = 0;     // analytic gradients that are not ~0
  std::string first;      // the first mismatch, for the failure message
};

// Compares analytic gradients with central differences of `objective` for
// every element of every variable. `objective` runs a forward pass at the
// current values and returns a scalar; `backward` runs a forward pass at the
// current values and fills every variable's grad.
GradientReport CompareGradients(const std::function<double()>& objective,
                                const std::function<void()>& backward, const std::vector<Variable>& vars) {
  GradientReport report;
  backward();
  std::vector<std::vector<float>> analytic;
  for (const auto& v : vars) {
    REQUIRE(v.value->size() == v.grad->size());
    analytic.emplace_back(v.grad->data(), v.grad->data() + v.grad->size());
  }
  for (size_t k = 0; k < vars.size(); ++k) {
    Tensor& x = *vars[k].value;
    for (size_t i = 0; i < x.size(); ++i) {
      const float saved = x[i];
      const float up = static_cast<float>(saved + kStep), down = static_cast<float>(saved - kStep);
      x[i] = up;
      const double plus = objective();
      x[i] = down;
      const double minus = objective();
      x[i] = saved;
      const double numeric = (plus - minus) / (static_cast<double>(up) - down);
      const double got = analytic[k][i];
      ++report.checked;
      if (std::fabs(got) > 1e-6) ++report.nonzero;
      const double tol = kAbsTol + kRelTol * std::max(std::fabs(numeric), std::fabs(got));
      if (std::fabs(got - numeric) > tol && report.mismatches++ == 0)
        report.first = "variable '" + vars[k].name + "' element " + std::to_string(i) + ": analytic " +
                       std::to_string(got) + ", numeric " + std::to_string(numeric);
    }
  }
  return report;
}

// The assertion every gradient test makes.
void CheckGradients(const std::function<double()>& objective, const std::function<void()>& backward,
                    const std::vector<Variable>& vars) {
  REQUIRE(!vars.empty());
  GradientReport r = CompareGradients(objective, backward, vars);
  INFO(r.mismatches << " of " << r.checked << " gradients differ; first: " << r.first);
  CHECK(r.mismatches == 0);
  // A backward that writes nothing would match a constant objective: refuse that.
  CHECK(r.nonzero > 0);
}

TEST_CASE("the gradient checker accepts a right gradient and catches a wrong one") {
  Tensor x({3});
  x[0] = 0.5f, x[1] = -1.0f, x[2] = 2.0f;
  Tensor g({3});
  auto objective = [&] {  // Σ x³
    double j = 0.0;
    for (size_t i = 0; i < x.size(); ++i) j += std::pow(static_cast<double>(x[i]), 3);
    return j;
  };
  float factor = 3.0f;
  auto backward = [&] {
    for (size_t i = 0; i < x.size(); ++i) g[i] = factor * x[i] * x[i];
  };
  GradientReport right = CompareGradients(objective, backward, {{"x", &x, &g}});
  CHECK(right.checked == 3);
  CHECK(right.mismatches == 0);
  factor = 3.1f;  // off by 3%: beyond the 1% tolerance
  GradientReport wrong = CompareGradients(objective, backward, {{"x", &x, &g}});
  CHECK(wrong.mismatches == 3);
  CHECK(wrong.first.find("variable 'x' element 0") != std::string::npos);
}

// ---------------------------------------------------------------------------
// Building single layers around the checker.

// A source whose feature the test sets and whose gradient the layer under test
// fills (a data layer wants no gradient, so it cannot stand in).
class InputLayer : public Layer {
 public:
  explicit InputLayer(Shape shape) {
    Init("input", "input");
    out_shape_ = std::move(shape);
  }
  Status Setup(const Fields&, const std::vector<const Layer*>&) override { return Status::Ok(); }
  void Forward(Phase, const std::vector<Layer*>&) override {}
  void Backward(const std::vector<Layer*>&) override {}
};

// Distinct values, at least `gap` apart and at least gap/2 from zero, in a
// fixed shuffled order: no ReLU or max-pool kink lies within kStep of any.
void FillDistinct(Tensor* t, uint32_t seed, double gap = 0.1) {
  const size_t n = t->size();
  std::vector<float> v(n);
  for (size_t k = 0; k < n; ++k) v[k] = static_cast<float>((static_cast<double>(k) - n / 2.0 + 0.5) * gap);
  std::mt19937 rng(seed);
  std::shuffle(v.begin(), v.end(), rng);
  std::copy(v.begin(), v.end(), t->data());
}

void FillUniform(Tensor* t, uint32_t seed, float bound) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-bound, bound);
  for (size_t i = 0; i < t->size(); ++i) (*t)[i] = u(rng);
}

std::unique_ptr<Layer> SetUpLayer(const std::string& type, const std::string& yaml_fields,
                                  const std::vector<const Layer*>& srcs) {
  auto layer = CreateLayer(type);
  REQUIRE(layer != nullptr);
  layer->Init("under_test", type);
  YamlFields fields_yaml(yaml_fields, "layer 'under_test'");
  const Fields& fields = *fields_yaml;
  Status s = layer->Setup(fields, srcs);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(fields.CheckNoUnknown().ok());
  return layer;
}

constexpr float kPrefill = 0.25f;  // layers add into their sources' gradients

// Checks a layer that maps one input to a feature: objective = Σ r·y with a
// fixed random r, so d objective / d y = r is what Backward receives.
void CheckOneInputLayer(const std::string& type, const std::string& yaml_fields, const Shape& in_shape,
                        int batch, Phase phase = Phase::kTrain) {
  InputLayer input(in_shape);
  auto layer = SetUpLayer(type, yaml_fields, {&input});
  input.Allocate(batch);
  layer->Allocate(batch);
  FillDistinct(&input.data(), 7);
  for (size_t k = 0; k < layer->params().size(); ++k)
    FillUniform(&layer->params()[k].value, 100 + static_cast<uint32_t>(k), 0.5f);
  Tensor r(layer->data().shape());
  FillUniform(&r, 3, 1.0f);
  std::vector<Layer*> srcs{&input};

  auto objective = [&] {
    layer->Forward(phase, srcs);
    double j = 0.0;
    for (size_t i = 0; i < r.size(); ++i) j += static_cast<double>(r[i]) * layer->data()[i];
    return j;
  };
  auto backward = [&] {
    layer->Forward(phase, srcs);
    std::copy(r.data(), r.data() + r.size(), layer->grad().data());
    input.grad().Fill(kPrefill);
    for (auto& p : layer->params()) p.grad.Fill(kPrefill);  // set, not added: Net does not clear them
    layer->Backward(srcs);
    for (size_t i = 0; i < input.grad().size(); ++i) input.grad()[i] -= kPrefill;
  };
  std::vector<Variable> vars{{"input", &input.data(), &input.grad()}};
  for (auto& p : layer->params()) vars.push_back({p.name, &p.value, &p.grad});
  CheckGradients(objective, backward, vars);
}

// The gradient checks below, by registry name: the registry test asserts that
// every registered type (but data, which has no gradient) is among them.
const std::set<std::string> kGradientChecked = {"fully_connected", "convolution", "pooling", "relu",
                                                "dropout",         "flatten",     "softmax_loss", "concat"};

TEST_CASE("fully_connected gradients match central differences for input, weight and bias") {
  CheckOneInputLayer("fully_connected", "{num_output: 3}", {4}, 2);
}

TEST_CASE("fully_connected flattens a [C,H,W] source and checks gradients") {
  CheckOneInputLayer("fully_connected", "{num_output: 2}", {2, 2, 3}, 2);
}

TEST_CASE("convolution gradients match with stride 1 and no padding") {
  CheckOneInputLayer("convolution", "{num_output: 2, kernel: 3}", {2, 5, 5}, 2);
}

TEST_CASE("convolution gradients match with stride 2 and padding 1") {
  CheckOneInputLayer("convolution", "{num_output: 3, kernel: 3, stride: 2, pad: 1}", {2, 5, 6}, 2);
}

TEST_CASE("convolution gradients match in the 'same' geometry (stride 1, output as wide as input)") {
  CheckOneInputLayer("convolution", "{num_output: 2, kernel: 5, pad: 2}", {2, 6, 7}, 2);
  CheckOneInputLayer("convolution", "{num_output: 3, kernel: 3, pad: 1}", {1, 4, 5}, 3);
}

TEST_CASE("convolution output shape follows (H + 2·pad − K) / stride + 1") {
  InputLayer input({2, 5, 6});
  auto layer = SetUpLayer("convolution", "{num_output: 3, kernel: 3, stride: 2, pad: 1}", {&input});
  CHECK(layer->out_shape() == Shape{3, 3, 3});
  CHECK(layer->param_count() == 3 * 2 * 3 * 3 + 3);
}

TEST_CASE("max pooling gradients go to each window's winner (non-overlapping windows)") {
  CheckOneInputLayer("pooling", "{kernel: 2}", {2, 4, 4}, 2);
}

TEST_CASE("max pooling gradients accumulate where overlapping windows share a winner") {
  CheckOneInputLayer("pooling", "{kernel: 3, stride: 1}", {1, 5, 5}, 2);
}

TEST_CASE("relu gradients match away from zero") {
  CheckOneInputLayer("relu", "{}", {3, 2, 2}, 2);
}

TEST_CASE("flatten passes gradients through unchanged") {
  InputLayer input({2, 3, 3});
  auto layer = SetUpLayer("flatten", "{}", {&input});
  CHECK(layer->out_shape() == Shape{18});
  CheckOneInputLayer("flatten", "{}", {2, 3, 3}, 2);
}

TEST_CASE("dropout with ratio 0 is the identity, gradients included") {
  CheckOneInputLayer("dropout", "{ratio: 0.0}", {6}, 3);
}

TEST_CASE("dropout backward multiplies dy by the mask its train forward drew") {
  const float ratio = 0.5f, scale = 1.0f / (1.0f - ratio);
  InputLayer input({40});
  auto layer = SetUpLayer("dropout", "{ratio: 0.5}", {&input});
  input.Allocate(2);
  layer->Allocate(2);
  FillDistinct(&input.data(), 11);  // no zeros, so the mask is y / x
  std::vector<Layer*> srcs{&input};
  layer->Forward(Phase::kTrain, srcs);

  std::vector<float> mask(input.data().size());
  int dropped = 0, kept = 0;
  for (size_t i = 0; i < mask.size(); ++i) {
    mask[i] = layer->data()[i] / input.data()[i];
    if (mask[i] == 0.0f) ++dropped;
    else if (std::fabs(mask[i] - scale) < 1e-5f) ++kept;
  }
  CHECK(dropped + kept == static_cast<int>(mask.size()));  // every unit dropped or scaled by 1/(1-ratio)
  CHECK(dropped > 10);  // 80 units at ratio 0.5: both kinds occur
  CHECK(kept > 10);

  Tensor dy(layer->data().shape());
  FillUniform(&dy, 5, 1.0f);
  std::copy(dy.data(), dy.data() + dy.size(), layer->grad().data());
  input.grad().Fill(kPrefill);
  layer->Backward(srcs);
  for (size_t i = 0; i < mask.size(); ++i) {
    INFO("unit " << i);
    CHECK(input.grad()[i] == doctest::Approx(kPrefill + mask[i] * dy[i]).epsilon(1e-5));
  }
}

TEST_CASE("dropout draws a fresh mask each train step and copies in test phase") {
  InputLayer input({64});
  auto layer = SetUpLayer("dropout", "{ratio: 0.5}", {&input});
  input.Allocate(1);
  layer->Allocate(1);
  FillDistinct(&input.data(), 13);
  std::vector<Layer*> srcs{&input};
  layer->Forward(Phase::kTrain, srcs);
  std::vector<float> first(layer->data().data(), layer->data().data() + layer->data().size());
  layer->Forward(Phase::kTrain, srcs);
  std::vector<float> second(layer->data().data(), layer->data().data() + layer->data().size());
  CHECK(first != second);
  layer->Forward(Phase::kTest, srcs);
  for (size_t i = 0; i < input.data().size(); ++i) CHECK(layer->data()[i] == input.data()[i]);
}

TEST_CASE("softmax_loss gradient w.r.t. the logits matches central differences of the loss") {
  const int batch = 3, classes = 5;
  InputLayer logits({classes});
  auto data = CreateLayer("data");
  data->Init("data", "data");
  REQUIRE(data->Setup(*YamlFields("{shape: [1]}", "layer 'data'"), {}).ok());
  auto layer = SetUpLayer("softmax_loss", "{}", {&logits, data.get()});
  auto* loss = dynamic_cast<SoftmaxLossLayer*>(layer.get());
  REQUIRE(loss != nullptr);
  logits.Allocate(batch);
  data->Allocate(batch);
  layer->Allocate(batch);
  auto& labels = static_cast<DataLayer*>(data.get())->labels();
  labels = {4, 0, 2};
  FillDistinct(&logits.data(), 17, 0.3);
  std::vector<Layer*> srcs{&logits, data.get()};

  auto objective = [&] {
    layer->Forward(Phase::kTrain, srcs);
    return static_cast<double>(loss->loss());
  };
  auto backward = [&] {
    layer->Forward(Phase::kTrain, srcs);
    logits.grad().Fill(kPrefill);
    layer->Backward(srcs);
    for (size_t i = 0; i < logits.grad().size(); ++i) logits.grad()[i] -= kPrefill;
  };
  CheckGradients(objective, backward, {{"logits", &logits.data(), &logits.grad()}});

  // Its feature is the class probabilities: each record's sum to 1.
  layer->Forward(Phase::kTrain, srcs);
  for (int b = 0; b < batch; ++b) {
    double sum = 0.0;
    for (int c = 0; c < classes; ++c) sum += layer->data()[b * classes + c];
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
  }
}

TEST_CASE("softmax_loss of uniform logits is log(classes), and correct counts arg-max hits") {
  InputLayer logits({4});
  auto data = CreateLayer("data");
  data->Init("data", "data");
  REQUIRE(data->Setup(*YamlFields("{shape: [1]}", "layer 'data'"), {}).ok());
  auto layer = SetUpLayer("softmax_loss", "{}", {&logits, data.get()});
  auto* loss = dynamic_cast<SoftmaxLossLayer*>(layer.get());
  logits.Allocate(2);
  data->Allocate(2);
  layer->Allocate(2);
  static_cast<DataLayer*>(data.get())->labels() = {1, 3};
  logits.data().Fill(0.5f);
  layer->Forward(Phase::kTrain, {&logits, data.get()});
  CHECK(loss->loss() == doctest::Approx(std::log(4.0)).epsilon(1e-6));
  // Record 0 predicts class 1 (right), record 1 predicts class 0 (wrong).
  for (int c = 0; c < 4; ++c) logits.data()[c] = c == 1 ? 2.0f : 0.0f;
  for (int c = 0; c < 4; ++c) logits.data()[4 + c] = c == 0 ? 2.0f : 0.0f;
  layer->Forward(Phase::kTrain, {&logits, data.get()});
  CHECK(loss->correct() == 1);
}

// ---------------------------------------------------------------------------
// The registry table.

TEST_CASE("every registered layer type creates a layer of that type, and each is gradient-checked") {
  const auto& types = LayerTypes();
  CHECK(types.size() == 9);
  std::set<std::string> unique(types.begin(), types.end());
  CHECK(unique.size() == types.size());
  for (const auto& type : types) {
    INFO("type '" << type << "'");
    auto layer = CreateLayer(type);
    CHECK(layer != nullptr);
    if (type != "data") CHECK(kGradientChecked.count(type) == 1);
  }
  for (const auto& type : kGradientChecked) {
    INFO("gradient-checked type '" << type << "' is not registered");
    CHECK(unique.count(type) == 1);
  }
  CHECK(unique.count("data") == 1);
  CHECK(CreateLayer("no_such_layer") == nullptr);
  CHECK(CreateLayer("") == nullptr);
}

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
