// Tests for lib/layers/elementwise_layers.cpp: relu, sigmoid, flatten, dropout.
#include <doctest/doctest.h>

#include <cmath>

#include "gradient_check.h"

namespace shoal {
namespace {

TEST_CASE("relu gradients match away from zero") { CheckOneInputLayer("relu", "{}", {3, 2, 2}, 2); }

TEST_CASE("sigmoid gradients match central differences, and its values are the logistic function's") {
  CheckOneInputLayer("sigmoid", "{}", {6}, 2);
  InputLayer input({3});
  auto layer = SetUpLayer("sigmoid", "{}", {&input});
  input.Allocate(1);
  layer->Allocate(1);
  input.data()[0] = 0.0f, input.data()[1] = 2.0f, input.data()[2] = -30.0f;
  std::vector<Layer*> srcs{&input};
  layer->Forward(Phase::kTrain, srcs);
  CHECK(layer->data()[0] == doctest::Approx(0.5));
  CHECK(layer->data()[1] == doctest::Approx(1.0 / (1.0 + std::exp(-2.0))));
  CHECK(layer->data()[2] == doctest::Approx(0.0).epsilon(1e-12));
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
    if (mask[i] == 0.0f)
      ++dropped;
    else if (std::fabs(mask[i] - scale) < 1e-5f)
      ++kept;
  }
  CHECK(dropped + kept == static_cast<int>(mask.size()));  // every unit dropped or scaled by 1/(1-ratio)
  CHECK(dropped > 10);                                     // 80 units at ratio 0.5: both kinds occur
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

TEST_CASE(
    "dropout's mask is the step's, the worker's and the layer's: fresh each step, the same when drawn "
    "again") {
  InputLayer input({64});
  input.Allocate(1);
  FillDistinct(&input.data(), 13);
  std::vector<Layer*> srcs{&input};
  // The feature of a dropout layer (a fresh one: a restarted worker's) under `key`.
  auto draw = [&](DrawKey key) {
    auto layer = SetUpLayer("dropout", "{ratio: 0.5}", {&input});
    layer->Allocate(1);
    layer->set_draw_key(key);
    layer->Forward(Phase::kTrain, srcs);
    return std::vector<float>(layer->data().data(), layer->data().data() + layer->data().size());
  };
  const std::vector<float> first = draw({7, 1, 0});
  CHECK(draw({7, 1, 0}) == first);  // drawn again alike
  CHECK(draw({7, 2, 0}) != first);  // the next step
  CHECK(draw({7, 1, 1}) != first);  // another worker
  CHECK(draw({8, 1, 0}) != first);  // another train.seed

  auto layer = SetUpLayer("dropout", "{ratio: 0.5}", {&input});
  layer->Allocate(1);
  layer->Forward(Phase::kTest, srcs);
  for (size_t i = 0; i < input.data().size(); ++i) CHECK(layer->data()[i] == input.data()[i]);
}

}  // namespace
}  // namespace shoal
