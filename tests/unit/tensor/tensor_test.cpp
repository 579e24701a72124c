// Tests for lib/tensor/tensor.h: a tensor bound to other memory (a device
// memory manager's) reads and writes there, and its home is untouched.
#include "tensor/tensor.h"

#include <doctest/doctest.h>

#include <vector>

namespace shoal {
namespace {

TEST_CASE("a bound tensor's values are the memory it is bound to until unbound") {
  Tensor t({2, 2});
  t.Fill(1.0f);
  std::vector<float> device(4, 5.0f);
  t.Bind(device.data());
  CHECK(t.bound());
  CHECK(t[3] == 5.0f);
  t.Fill(7.0f);
  CHECK(device[0] == 7.0f);
  CHECK(t.home()[0] == 1.0f);
  t.Unbind();
  CHECK_FALSE(t.bound());
  CHECK(t[0] == 1.0f);
}

TEST_CASE("a copy of a bound tensor holds its current values at home; a move keeps the binding") {
  Tensor t({3});
  std::vector<float> device{1.0f, 2.0f, 3.0f};
  t.Bind(device.data());
  Tensor copy = t;
  CHECK_FALSE(copy.bound());
  CHECK(copy[2] == 3.0f);
  Tensor moved = std::move(t);
  CHECK(moved.bound());
  CHECK(moved.data() == device.data());
  moved.Reshape({3});  // reshaping drops the binding
  CHECK_FALSE(moved.bound());
}

}  // namespace
}  // namespace shoal
