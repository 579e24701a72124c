// Tests for lib/layers/convolution_layer.cpp.
#include <doctest/doctest.h>

#include "gradient_check.h"

namespace shoal {
namespace {

TEST_CASE("convolution gradients match with stride 1 and no padding") {
  CheckOneInputLayer("convolution", "{num_output: 2, kernel: 3}", {2, 5, 5}, 2);
}

TEST_CASE("convolution gradients match with stride 2 and padding 1") {
  CheckOneInputLayer("convolution", "{num_output: 3, kernel: 3, stride: 2, pad: 1}", {2, 5, 6}, 2);
}

TEST_CASE("convolution gradients match in the 'same' geometry (stride 1, output as wide as input)") {
  CheckOneInputLayer("convolution", "{num_output: 2, kernel: 5, pad: 2}", {2, 6, 7}, 2);
  CheckOneInputLayer("convolution", "{num_output: 3, kernel: 3, pad: 1}", {1, 4, 5}, 3);
}

TEST_CASE("convolution output shape follows (H + 2·pad − K) / stride + 1") {
  InputLayer input({2, 5, 6});
  auto layer = SetUpLayer("convolution", "{num_output: 3, kernel: 3, stride: 2, pad: 1}", {&input});
  CHECK(layer->out_shape() == Shape{3, 3, 3});
  CHECK(layer->param_count() == 3 * 2 * 3 * 3 + 3);
}

TEST_CASE("convolution with bias: false has its weights alone, and their gradients match") {
  InputLayer input({2, 4, 4});
  auto layer = SetUpLayer("convolution", "{num_output: 3, kernel: 3, pad: 1, bias: false}", {&input});
  CHECK(layer->param_count() == 3 * 2 * 3 * 3);
  CHECK(layer->params().size() == 1);
  CheckOneInputLayer("convolution", "{num_output: 3, kernel: 3, pad: 1, bias: false}", {2, 4, 4}, 2);
}

}  // namespace
}  // namespace shoal
