// Tests for lib/layers/reconstruction_loss_layers.cpp.
#include <doctest/doctest.h>

#include <cmath>

#include "gradient_check.h"
#include "layers/loss_layer.h"

namespace shoal {
namespace {

// The loss's gradient w.r.t. the reconstruction against central differences
// of the loss, for targets in [0, 1]; returns the loss at the start.
double CheckLoss(const std::string& type) {
  const int batch = 3, units = 4;
  InputLayer reconstruction({units}, "reconstruction"), target({units}, "target");
  auto layer = SetUpLayer(type, "{}", {&reconstruction, &target});
  auto* loss = dynamic_cast<LossLayer*>(layer.get());
  REQUIRE(loss != nullptr);
  CHECK(loss->classes() == 0);
  reconstruction.Allocate(batch);
  target.Allocate(batch);
  layer->Allocate(batch);
  FillDistinct(&reconstruction.data(), 5, 0.15);
  for (size_t i = 0; i < target.data().size(); ++i) target.data()[i] = static_cast<float>(i % 5) / 4.0f;
  std::vector<Layer*> srcs{&reconstruction, &target};
  auto objective = [&] {
    layer->Forward(Phase::kTrain, srcs);
    return static_cast<double>(loss->loss());
  };
  auto backward = [&] {
    layer->Forward(Phase::kTrain, srcs);
    reconstruction.grad().Fill(kPrefill);
    target.grad().Fill(kPrefill);
    layer->Backward(srcs);
    for (size_t i = 0; i < reconstruction.grad().size(); ++i) reconstruction.grad()[i] -= kPrefill;
  };
  CheckGradients(objective, backward, {{"reconstruction", &reconstruction.data(), &reconstruction.grad()}});
  for (size_t i = 0; i < target.grad().size(); ++i) CHECK(target.grad()[i] == kPrefill);  // a constant
  // The batch's loss is the mean of the records' (the feature).
  const double mean = objective();
  CHECK((layer->data()[0] + layer->data()[1] + layer->data()[2]) / 3 == doctest::Approx(mean));
  return mean;
}

TEST_CASE("euclidean_loss: each record's summed squared error, its gradient checked") {
  CheckLoss("euclidean_loss");
  InputLayer y({2}), t({2});
  auto layer = SetUpLayer("euclidean_loss", "{}", {&y, &t});
  y.Allocate(1), t.Allocate(1), layer->Allocate(1);
  y.data()[0] = 1.0f, y.data()[1] = 0.5f, t.data()[0] = 0.0f, t.data()[1] = 1.0f;
  std::vector<Layer*> srcs{&y, &t};
  layer->Forward(Phase::kTest, srcs);
  CHECK(dynamic_cast<LossLayer*>(layer.get())->loss() == doctest::Approx(1.0 + 0.25));
}

TEST_CASE("sigmoid_cross_entropy_loss: the cross-entropy of sigmoid(logits), stable, its gradient checked") {
  CheckLoss("sigmoid_cross_entropy_loss");
  InputLayer z({3}), t({3});
  auto layer = SetUpLayer("sigmoid_cross_entropy_loss", "{}", {&z, &t});
  z.Allocate(1), t.Allocate(1), layer->Allocate(1);
  z.data()[0] = 0.0f, z.data()[1] = 200.0f, z.data()[2] = -200.0f;
  t.data()[0] = 1.0f, t.data()[1] = 1.0f, t.data()[2] = 1.0f;
  std::vector<Layer*> srcs{&z, &t};
  layer->Forward(Phase::kTest, srcs);
  // ln 2 + ~0 + 200: no overflow where e^200 would.
  CHECK(dynamic_cast<LossLayer*>(layer.get())->loss() == doctest::Approx(std::log(2.0) + 200.0));
}

TEST_CASE("a reconstruction loss refuses a target of another size, naming both") {
  InputLayer y({3}, "out"), t({4}, "in");
  auto layer = CreateLayer("euclidean_loss");
  layer->Init("loss", "euclidean_loss");
  YamlFields f("{}", "layer 'loss'");
  Status s = layer->Setup(*f, {&y, &t});
  CHECK(s.message().find("'out' gives [3] but its target 'in' [4]") != std::string::npos);
}

}  // namespace
}  // namespace shoal
