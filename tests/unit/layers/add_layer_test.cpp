// Tests for lib/layers/add_layer.cpp.
#include <doctest/doctest.h>

#include "gradient_check.h"

namespace shoal {
namespace {

TEST_CASE("add sums its sources and gives each the sum's gradient") {
  InputLayer a({2, 3}, "a"), b({2, 3}, "b"), c({2, 3}, "c");
  auto layer = SetUpLayer("add", "{}", {&a, &b, &c});
  CHECK(layer->out_shape() == Shape{2, 3});
  for (InputLayer* in : {&a, &b, &c}) in->Allocate(2);
  layer->Allocate(2);
  FillDistinct(&a.data(), 1);
  FillDistinct(&b.data(), 2);
  FillDistinct(&c.data(), 3);
  Tensor r(layer->data().shape());
  FillUniform(&r, 4, 1.0f);
  std::vector<Layer*> srcs{&a, &b, &c};
  auto objective = [&] {
    layer->Forward(Phase::kTrain, srcs);
    double j = 0.0;
    for (size_t i = 0; i < r.size(); ++i) j += static_cast<double>(r[i]) * layer->data()[i];
    return j;
  };
  auto backward = [&] {
    layer->Forward(Phase::kTrain, srcs);
    std::copy(r.data(), r.data() + r.size(), layer->grad().data());
    for (InputLayer* in : {&a, &b, &c}) in->grad().Fill(0.0f);
    layer->Backward(srcs);
  };
  CheckGradients(objective, backward,
                 {{"a", &a.data(), &a.grad()}, {"b", &b.data(), &b.grad()}, {"c", &c.data(), &c.grad()}});
  layer->Forward(Phase::kTrain, srcs);
  CHECK(layer->data()[4] == a.data()[4] + b.data()[4] + c.data()[4]);
}

TEST_CASE("add refuses sources of different shapes and a single source") {
  InputLayer a({2, 3}, "a"), b({3, 2}, "b");
  auto layer = CreateLayer("add");
  layer->Init("sum", "add");
  YamlFields f("{}", "layer 'sum'");
  const Status s = layer->Setup(*f, {&a, &b});
  INFO(s.ToString());
  CHECK(s.ToString().find("'b' gives [3,2], which is not the shape of 'a' [2,3]") != std::string::npos);
  CHECK(layer->Setup(*f, {&a}).ToString().find("at least two source layers") != std::string::npos);
}

}  // namespace
}  // namespace shoal
