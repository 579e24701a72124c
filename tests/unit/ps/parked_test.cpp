// Tests for lib/ps/parked: requests answered later, in order, and expired at
// their deadline.
#include "ps/parked.h"

#include <doctest/doctest.h>

#include <vector>

namespace shoal {
namespace {

using Clock = ParkedRequests::Clock;

ParkedRequests::Parked At(int slot, uint64_t at, bool done = false,
                          Clock::time_point deadline = Clock::time_point::max(), uint32_t sender = 0) {
  return {slot, Read{-1, at, {}}, done, deadline, sender};
}

TEST_CASE("ready requests are answered in the order they came, the rest stay") {
  ParkedRequests parked;
  parked.Park(At(1, 3));
  parked.Park(At(2, 1));
  parked.Park(At(3, 2, true));
  parked.Park(At(4, 1));
  std::vector<int> answered;
  const int done = parked.AnswerReady([](const auto& p) { return p.read.at <= 2; },
                                      [&](const auto& p) { answered.push_back(p.slot); });
  CHECK(answered == std::vector<int>{2, 3, 4});
  CHECK(done == 1);
  REQUIRE(parked.size() == 1);
  CHECK(parked.all()[0].slot == 1);
}

TEST_CASE("a request past its deadline is expired; DropAll hands over every one") {
  ParkedRequests parked;
  const auto now = Clock::now();
  parked.Park(At(1, 5, false, now - std::chrono::milliseconds(1)));
  parked.Park(At(2, 5, false, now + std::chrono::hours(1)));
  std::vector<int> expired;
  parked.Expire(now, [&](const auto& p) { expired.push_back(p.slot); });
  CHECK(expired == std::vector<int>{1});
  CHECK(parked.size() == 1);
  std::vector<int> dropped;
  parked.DropAll([&](const auto& p) { dropped.push_back(p.slot); });
  CHECK(dropped == std::vector<int>{2});
  CHECK(parked.empty());
}

TEST_CASE("DropFrom hands over one sender's requests and keeps the others' in order") {
  ParkedRequests parked;
  const auto never = Clock::time_point::max();
  parked.Park(At(1, 1, false, never, 7));
  parked.Park(At(2, 1, true, never, 3));
  parked.Park(At(3, 2, false, never, 7));
  parked.Park(At(4, 2, false, never, 5));
  std::vector<int> dropped;
  parked.DropFrom(7, [&](const auto& p) { dropped.push_back(p.slot); });
  CHECK(dropped == std::vector<int>{1, 3});
  REQUIRE(parked.size() == 2);
  CHECK(parked.all()[0].slot == 2);
  CHECK(parked.all()[1].slot == 4);
  CHECK(parked.CountFrom(7) == 0);
}

}  // namespace
}  // namespace shoal
