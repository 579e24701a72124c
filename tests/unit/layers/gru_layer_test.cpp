// Tests for lib/layers/gru_layer.cpp (and lib/ops/gru.cpp): gradients through
// several steps against central differences, and the forward pass against
// the GRU's equations computed here step by step.
#include <doctest/doctest.h>

#include <cmath>

#include "gradient_check.h"

namespace shoal {
namespace {

TEST_CASE("gru gradients through 4 steps match central differences for input and every parameter") {
  CheckOneInputLayer("gru", "{num_output: 3}", {4, 2}, 2);
}

TEST_CASE("gru gradients over one step, and over a longer sequence of wider inputs") {
  CheckOneInputLayer("gru", "{num_output: 2}", {1, 3}, 3);
  CheckOneInputLayer("gru", "{num_output: 4}", {7, 5}, 1);
}

TEST_CASE("gru's states follow PyTorch's GRU equations from a zero state, the parameters shared by every step") {
  const int steps = 3, input = 2, hidden = 2;
  InputLayer source({steps, input});
  auto layer = SetUpLayer("gru", "{num_output: 2}", {&source});
  REQUIRE(layer->out_shape() == Shape{steps, hidden});
  REQUIRE(layer->params().size() == 4);
  CHECK(layer->params()[0].shape == Shape{3 * hidden, input});
  CHECK(layer->params()[1].shape == Shape{3 * hidden, hidden});
  source.Allocate(1);
  layer->Allocate(1);
  FillDistinct(&source.data(), 3, 0.3);
  for (size_t p = 0; p < 4; ++p) FillUniform(&layer->params()[p].value, 20 + static_cast<uint32_t>(p), 0.8f);
  std::vector<Layer*> srcs{&source};
  layer->Forward(Phase::kTrain, srcs);
  const auto& w = layer->params();
  auto sigmoid = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  std::vector<double> h(hidden, 0.0);
  for (int t = 0; t < steps; ++t) {
    std::vector<double> gi(3 * hidden), gh(3 * hidden);
    for (int k = 0; k < 3 * hidden; ++k) {
      gi[k] = w[2].value[k];
      gh[k] = w[3].value[k];
      for (int i = 0; i < input; ++i) gi[k] += w[0].value[k * input + i] * source.data()[t * input + i];
      for (int j = 0; j < hidden; ++j) gh[k] += w[1].value[k * hidden + j] * h[j];
    }
    std::vector<double> next(hidden);
    for (int j = 0; j < hidden; ++j) {
      const double r = sigmoid(gi[j] + gh[j]), z = sigmoid(gi[hidden + j] + gh[hidden + j]);
      const double n = std::tanh(gi[2 * hidden + j] + r * gh[2 * hidden + j]);
      next[j] = (1 - z) * n + z * h[j];
      CHECK(layer->data()[t * hidden + j] == doctest::Approx(next[j]).epsilon(1e-5));
    }
    h = next;
  }
}

TEST_CASE("gru refuses a source that is not a sequence") {
  InputLayer flat({6});
  auto layer = CreateLayer("gru");
  layer->Init("g", "gru");
  YamlFields f("{num_output: 2}", "layer 'g'");
  CHECK(layer->Setup(*f, {&flat}).message().find("needs a sequence source [steps, inputs]; 'input' gives [6]") !=
        std::string::npos);
}

}  // namespace
}  // namespace shoal
