// Tests for lib/layers/softmax_loss_layer.cpp.
#include "layers/softmax_loss_layer.h"

#include <doctest/doctest.h>

#include "gradient_check.h"
#include "layers/data_layer.h"

namespace shoal {
namespace {

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

}  // namespace
}  // namespace shoal
