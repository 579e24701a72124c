// Tests for lib/ps/ssp: SSP's rule for when a read may be answered
// and how stale the answer is.
#include <doctest/doctest.h>

#include <limits>
#include <vector>

#include "ps/ssp.h"

namespace shoal {
namespace {

TEST_CASE("the slowest clock is the least of the workers not done; with none left, nobody is waited for") {
  CHECK(SlowestClock({5, 2, 7}, {false, false, false}) == 2);
  CHECK(SlowestClock({5, 2, 7}, {false, true, false}) == 5);
  CHECK(SlowestClock({5, 2}, {true, true}) == std::numeric_limits<uint64_t>::max());
}

TEST_CASE("a read at clock c is answered exactly when the slowest clock is at least c − s") {
  // Slack 2: clock 7 needs the slowest at 5 or more.
  CHECK(!SspReadable(7, 4, 2));
  CHECK(SspReadable(7, 5, 2));
  CHECK(SspReadable(7, 9, 2));
  // Slack 0: every worker's update of every step before.
  CHECK(!SspReadable(3, 2, 0));
  CHECK(SspReadable(3, 3, 0));
  // A clock below the slack never waits (no unsigned wrap-around).
  CHECK(SspReadable(1, 0, 5));
  CHECK(SspReadable(0, 0, 0));
}

TEST_CASE("staleness is the clock minus the slowest clock, and at most the slack for every read let through") {
  CHECK(SspStaleness(7, 5) == 2);
  CHECK(SspStaleness(3, 3) == 0);
  CHECK(SspStaleness(2, 9) == 0);  // the reader is the one behind
  for (uint64_t s = 0; s < 4; ++s)
    for (uint64_t clock = 0; clock < 12; ++clock)
      for (uint64_t slowest = 0; slowest < 12; ++slowest)
        if (SspReadable(clock, slowest, s)) CHECK(SspStaleness(clock, slowest) <= s);
}

}  // namespace
}  // namespace shoal
