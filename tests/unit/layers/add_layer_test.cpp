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
  CheckSumObjective(layer.get(), {&a, &b, &c}, {});
  layer->Forward(Phase::kTrain, {&a, &b, &c});
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
