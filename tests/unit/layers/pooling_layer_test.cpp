// Tests for lib/layers/pooling_layer.cpp.
#include <doctest/doctest.h>

#include "gradient_check.h"

namespace shoal {
namespace {

TEST_CASE("max pooling gradients go to each window's winner (non-overlapping windows)") {
  CheckOneInputLayer("pooling", "{kernel: 2}", {2, 4, 4}, 2);
}

TEST_CASE("max pooling gradients accumulate where overlapping windows share a winner") {
  CheckOneInputLayer("pooling", "{kernel: 3, stride: 1}", {1, 5, 5}, 2);
}

}  // namespace
}  // namespace shoal
