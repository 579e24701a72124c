// Tests for lib/layers/gru_layer.cpp (and lib/ops/gru.cpp): gradients through
// several steps against central differences, and the forward pass against
// the GRU's equations computed here step by step.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gradient_check.h"
#include "ops/blas.h"

namespace shoal {
namespace {

TEST_CASE("gru gradients through 4 steps match central differences for input and every parameter") {
  CheckOneInputLayer("gru", "{num_output: 3}", {4, 2}, 2);
}

TEST_CASE("gru gradients over one step, and over a longer sequence of wider inputs") {
  CheckOneInputLayer("gru", "{num_output: 2}", {1, 3}, 3);
  CheckOneInputLayer("gru", "{num_output: 4}", {7, 5}, 1);
}

// The layer's forward pass over `batch` records at `threads` compute threads
// against PyTorch's GRU equations computed here in double, record by record.
void CheckEquations(int batch, int steps, int input, int hidden, int threads) {
  INFO("batch " << batch << ", hidden " << hidden << ", " << threads << " thread(s)");
  InputLayer source({steps, input});
  auto layer = SetUpLayer("gru", "{num_output: " + std::to_string(hidden) + "}", {&source});
  REQUIRE(layer->out_shape() == Shape{steps, hidden});
  REQUIRE(layer->params().size() == 4);
  CHECK(layer->params()[0].shape == Shape{3 * hidden, input});
  CHECK(layer->params()[1].shape == Shape{3 * hidden, hidden});
  source.Allocate(batch);
  layer->Allocate(batch);
  FillDistinct(&source.data(), 3, 0.3 / batch);
  const float scale = 1.1f / std::sqrt(static_cast<float>(hidden));
  for (size_t p = 0; p < 4; ++p) FillUniform(&layer->params()[p].value, 20 + static_cast<uint32_t>(p), scale);
  std::vector<Layer*> srcs{&source};
  SetComputeThreads(threads);
  layer->Forward(Phase::kTrain, srcs);
  SetComputeThreads(1);
  const auto& w = layer->params();
  auto sigmoid = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  for (int b = 0; b < batch; ++b) {
    std::vector<double> h(hidden, 0.0);
    for (int t = 0; t < steps; ++t) {
      const size_t row = static_cast<size_t>(b) * steps + t;
      std::vector<double> gi(3 * hidden), gh(3 * hidden);
      for (int k = 0; k < 3 * hidden; ++k) {
        gi[k] = w[2].value[k];
        gh[k] = w[3].value[k];
        for (int i = 0; i < input; ++i) gi[k] += w[0].value[k * input + i] * source.data()[row * input + i];
        for (int j = 0; j < hidden; ++j) gh[k] += w[1].value[k * hidden + j] * h[j];
      }
      std::vector<double> next(hidden);
      for (int j = 0; j < hidden; ++j) {
        const double r = sigmoid(gi[j] + gh[j]), z = sigmoid(gi[hidden + j] + gh[hidden + j]);
        const double n = std::tanh(gi[2 * hidden + j] + r * gh[2 * hidden + j]);
        next[j] = (1 - z) * n + z * h[j];
        INFO("record " << b << ", step " << t << ", unit " << j);
        CHECK(layer->data()[row * hidden + j] == doctest::Approx(next[j]).epsilon(1e-5));
      }
      h = next;
    }
  }
}

TEST_CASE(
    "gru's states follow PyTorch's GRU equations from a zero state, the parameters shared by every step") {
  CheckEquations(1, 3, 2, 2, 1);
  CheckEquations(2, 3, 2, 2, 1);
}

TEST_CASE("gru's states follow the equations where the compute threads share a step's records") {
  // 33 records of 512 units are enough to split a step's records over threads.
  CheckEquations(33, 2, 3, 512, 2);
  CheckEquations(33, 2, 3, 512, 3);
}

TEST_CASE("gru with carry_state continues each row from where its last pass left it, until reset") {
  const int input = 2, hidden = 3, batch = 2;
  InputLayer whole({6, input}), half({3, input});
  auto reference = SetUpLayer("gru", "{num_output: 3}", {&whole});
  auto carrying = SetUpLayer("gru", "{num_output: 3, carry_state: true}", {&half});
  CHECK(carrying->CarriesState());
  CHECK_FALSE(reference->CarriesState());
  whole.Allocate(batch), half.Allocate(batch), reference->Allocate(batch), carrying->Allocate(batch);
  FillDistinct(&whole.data(), 5, 0.3);
  for (size_t p = 0; p < 4; ++p) {
    FillUniform(&reference->params()[p].value, 30 + static_cast<uint32_t>(p), 0.8f);
    carrying->params()[p].value = reference->params()[p].value;
  }
  std::vector<Layer*> whole_src{&whole}, half_src{&half};
  reference->Forward(Phase::kTrain, whole_src);
  // Row b's first and second halves of its sequence, as two batches.
  auto feed = [&](int from) {
    for (int b = 0; b < batch; ++b)
      for (int i = 0; i < 3 * input; ++i)
        half.data()[b * 3 * input + i] = whole.data()[b * 6 * input + from * input + i];
  };
  auto matches = [&](int from) {
    for (int b = 0; b < batch; ++b)
      for (int i = 0; i < 3 * hidden; ++i)
        if (carrying->data()[b * 3 * hidden + i] !=
            doctest::Approx(reference->data()[b * 6 * hidden + from * hidden + i]).epsilon(1e-6))
          return false;
    return true;
  };
  feed(0);
  carrying->Forward(Phase::kTrain, half_src);
  CHECK(matches(0));
  feed(3);
  carrying->Forward(Phase::kTest, half_src);  // evaluation in streams carries it too
  CHECK(matches(3));
  carrying->ResetState();  // a new stream: from zeros again
  carrying->Forward(Phase::kTrain, half_src);
  CHECK_FALSE(matches(3));
  feed(0);
  carrying->ResetState();
  carrying->Forward(Phase::kTrain, half_src);
  CHECK(matches(0));
}

TEST_CASE("gru refuses a source that is not a sequence") {
  InputLayer flat({6});
  auto layer = CreateLayer("gru");
  layer->Init("g", "gru");
  YamlFields f("{num_output: 2}", "layer 'g'");
  CHECK(layer->Setup(*f, {&flat})
            .message()
            .find("needs a sequence source [steps, inputs]; 'input' gives [6]") != std::string::npos);
}

}  // namespace
}  // namespace shoal
