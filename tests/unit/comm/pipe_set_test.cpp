// Tests for lib/comm/pipe_set: the open pipes of a socket from NNG's pipe
// events, in the orders NNG 1.5.2 fires them.
#include "comm/pipe_set.h"

#include <doctest/doctest.h>

#include <chrono>
#include <thread>

namespace shoal {
namespace {

using std::chrono::milliseconds;

TEST_CASE("pipes added and removed: empty again once the last has gone, and for how long") {
  PipeSet pipes;
  CHECK(pipes.Empty());
  CHECK(pipes.EmptyFor() == milliseconds(0));  // never connected: not "gone"
  pipes.Added(7);
  pipes.Added(8);
  pipes.Removed(7);
  CHECK(!pipes.Empty());
  CHECK(pipes.Closed(7));
  CHECK(!pipes.Closed(8));
  CHECK(pipes.EmptyFor() == milliseconds(0));
  pipes.Removed(8);
  CHECK(pipes.Empty());
  std::this_thread::sleep_for(milliseconds(20));
  CHECK(pipes.EmptyFor() >= milliseconds(20));
  pipes.Added(9);
  CHECK(pipes.EmptyFor() == milliseconds(0));
}

TEST_CASE("a pipe removed before or without its addition is never taken for an open one") {
  PipeSet pipes;
  pipes.Added(1);
  pipes.Removed(2);  // closed during its handshake: no addition ever comes
  CHECK(!pipes.Empty());
  pipes.Removed(3);  // closed as it was being added: the addition comes after
  pipes.Added(3);
  pipes.Removed(1);
  CHECK(pipes.Empty());
  CHECK(pipes.Closed(3));
}

TEST_CASE("the removals remembered are the most recent kRemembered") {
  PipeSet pipes;
  for (uint32_t id = 1; id <= PipeSet::kRemembered + 1; ++id) pipes.Removed(id);
  CHECK(!pipes.Closed(1));
  CHECK(pipes.Closed(2));
  CHECK(pipes.Closed(PipeSet::kRemembered + 1));
  pipes.Removed(5);  // a repeat is remembered once
  CHECK(pipes.Closed(2));
}

}  // namespace
}  // namespace shoal
