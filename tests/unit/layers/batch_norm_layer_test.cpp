// Tests for lib/layers/batch_norm_layer.cpp (its values against PyTorch's are
// in torch_reference_test.cpp).
#include <doctest/doctest.h>

#include "gradient_check.h"

namespace shoal {
namespace {

// Gradients of Σ r·y by the input, the scale and the shift; the running
// averages' "gradients" are their change, checked on their own below.
void CheckBatchNorm(const Shape& in_shape, int batch) {
  InputLayer input(in_shape);
  auto layer = SetUpLayer("batch_norm", "{}", {&input});
  REQUIRE(layer->params().size() == 4);
  input.Allocate(batch);
  layer->Allocate(batch);
  FillDistinct(&input.data(), 7);
  FillUniform(&layer->params()[0].value, 100, 1.5f);
  FillUniform(&layer->params()[1].value, 101, 0.5f);
  CheckSumObjective(layer.get(), {&input}, {&layer->params()[0], &layer->params()[1]});
}

TEST_CASE("batch norm gradients match central differences, per channel and per feature") {
  CheckBatchNorm({3, 2, 2}, 3);
  CheckBatchNorm({5}, 4);
}

TEST_CASE("batch norm's running averages move toward the batch's statistics; evaluation uses them") {
  InputLayer input({1, 1, 2});
  auto layer = SetUpLayer("batch_norm", "{momentum: 0.25, eps: 0.0001}", {&input});
  input.Allocate(2);
  layer->Allocate(2);
  const float x[] = {1.0f, 2.0f, 3.0f, 6.0f};  // mean 3, biased variance 3.5, unbiased 14/3
  std::copy(x, x + 4, input.data().data());
  auto& p = layer->params();
  CHECK(p[2].role == ParamRole::kRunningAverage);
  CHECK(p[3].role == ParamRole::kRunningAverage);
  CHECK(p[0].role == ParamRole::kTrained);
  p[0].value.Fill(1.0f), p[1].value.Fill(0.0f), p[2].value.Fill(1.0f), p[3].value.Fill(2.0f);
  std::vector<Layer*> srcs{&input};
  layer->Forward(Phase::kTrain, srcs);
  CHECK(layer->data()[0] == doctest::Approx(-2.0 / std::sqrt(3.5001)));
  layer->grad().Fill(0.0f);
  input.grad().Fill(0.0f);
  layer->Backward(srcs);
  // old − new = momentum · (old − batch)
  CHECK(p[2].grad[0] == doctest::Approx(0.25 * (1.0 - 3.0)));
  CHECK(p[3].grad[0] == doctest::Approx(0.25 * (2.0 - 14.0 / 3.0)));
  layer->Forward(Phase::kTest, srcs);
  CHECK(layer->data()[3] == doctest::Approx((6.0 - 1.0) / std::sqrt(2.0001)));
}

TEST_CASE("batch norm refuses a sequence source") {
  InputLayer input({4, 3});
  auto layer = CreateLayer("batch_norm");
  layer->Init("bn", "batch_norm");
  YamlFields f("{}", "layer 'bn'");
  const Status s = layer->Setup(*f, {&input});
  CHECK(s.ToString().find("batch norm takes a vector or an image [C, H, W]") != std::string::npos);
}

}  // namespace
}  // namespace shoal
