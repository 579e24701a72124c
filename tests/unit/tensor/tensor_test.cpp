// Tests for lib/tensor/tensor.h: a tensor bound to other memory (a device
// memory manager's) reads and writes there, and its home is untouched; large
// values start on a huge page's boundary (outside AddressSanitizer), zeroed,
// and survive growing and shrinking.
#include "tensor/tensor.h"

#include <doctest/doctest.h>

#include <cstdint>
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

TEST_CASE("large values are zeroed, kept across a reshape, and on a huge page's boundary unsanitized") {
  const int floats = static_cast<int>(kHugePage / sizeof(float)) + 3;  // past a boundary: a partial last page
  Tensor t({floats});
  CHECK(t[0] == 0.0f);
  CHECK(t[floats - 1] == 0.0f);
  t[floats - 1] = 4.0f;
  if (MapsLargeBlocks()) CHECK(reinterpret_cast<uintptr_t>(t.data()) % kHugePage == 0);
  t.Reshape({2 * floats});  // grows: moved to a new block
  CHECK(t[floats - 1] == 4.0f);
  CHECK(t[2 * floats - 1] == 0.0f);
  const Tensor copy = t;  // a block of its own
  CHECK(copy[floats - 1] == 4.0f);
  if (MapsLargeBlocks()) CHECK(reinterpret_cast<uintptr_t>(copy.data()) % kHugePage == 0);
  t.Reshape({16});  // shrinks below the threshold, in place
  CHECK(t[15] == 0.0f);
}

}  // namespace
}  // namespace shoal
