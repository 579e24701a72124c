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

}  // namespace
}  // namespace shoal
