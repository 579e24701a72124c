// Tests for lib/layers/fully_connected_layer.cpp.
#include <doctest/doctest.h>

#include "gradient_check.h"

namespace shoal {
namespace {

TEST_CASE("fully_connected gradients match central differences for input, weight and bias") {
  CheckOneInputLayer("fully_connected", "{num_output: 3}", {4}, 2);
}

TEST_CASE("fully_connected flattens a [C,H,W] source and checks gradients") {
  CheckOneInputLayer("fully_connected", "{num_output: 2}", {2, 2, 3}, 2);
}

TEST_CASE("fully_connected with axis 1 maps each step of a sequence, the weights shared; gradients checked") {
  CheckOneInputLayer("fully_connected", "{num_output: 3, axis: 1}", {4, 2}, 2);
  InputLayer seq({3, 2});
  auto layer = SetUpLayer("fully_connected", "{num_output: 2, axis: 1}", {&seq});
  CHECK(layer->out_shape() == Shape{3, 2});
  CHECK(layer->params()[0].shape == Shape{2, 2});
  CHECK(!layer->SplitsOutputs());
  InputLayer flat({6});
  auto refused = CreateLayer("fully_connected");
  refused->Init("fc", "fully_connected");
  YamlFields f("{num_output: 2, axis: 1}", "layer 'fc'");
  CHECK(refused->Setup(*f, {&flat}).message().find("not a sequence") != std::string::npos);
}

}  // namespace
}  // namespace shoal
