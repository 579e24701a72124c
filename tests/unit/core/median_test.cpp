// Tests for lib/core/median: the value at size / 2 once sorted, 0 for none.
#include "core/median.h"

#include <doctest/doctest.h>

#include <vector>

namespace shoal {
namespace {

TEST_CASE("Median: the middle value, the upper of two middles, and 0 for no values") {
  CHECK(Median({3.0, 1.0, 2.0}) == 2.0);
  CHECK(Median({4.0, 1.0, 3.0, 2.0}) == 3.0);
  CHECK(Median({5.0}) == 5.0);
  CHECK(Median({}) == 0.0);
}

}  // namespace
}  // namespace shoal
