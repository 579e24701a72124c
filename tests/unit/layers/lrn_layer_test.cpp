// Tests for lib/layers/lrn_layer.cpp (its values against PyTorch's are in torch_reference_test.cpp).
#include <doctest/doctest.h>

#include "gradient_check.h"

namespace shoal {
namespace {

TEST_CASE("lrn gradients match central differences, odd and even windows") {
  CheckOneInputLayer("lrn", "{local_size: 3, alpha: 0.5, beta: 0.75, k: 1.0}", {5, 2, 2}, 2);
  CheckOneInputLayer("lrn", "{local_size: 4, alpha: 0.3, beta: 0.6, k: 2.0}", {6, 1, 3}, 2);
  // A window wider than the channels.
  CheckOneInputLayer("lrn", "{local_size: 9, alpha: 0.2}", {3, 2, 1}, 1);
}

}  // namespace
}  // namespace shoal
