// The one way lib/ closes an NNG socket: with a deadline.
//
// NNG 1.5.2 (Debian 12's libnng) can stall nng_close forever: when a close
// races a connection's own teardown, its reaper may wait on a pipe's aio that
// was started and never scheduled, and nng_close waits on the reaper
// (nanomsg/nng#1813, fixed in NNG 1.8). A worker failing on a bad shard hung
// there for good, silent, instead of reporting and exiting. So the close runs
// in a thread of its own; past kCloseDeadline it is left to finish or to end
// with the process, and the caller goes on, told why on standard error. (A
// stalled close leaves NNG's one reaper stuck: later closes are given 100 ms.)
#pragma once

#include <nng/nng.h>

#include <chrono>
#include <string>

namespace shoal {

inline constexpr std::chrono::seconds kCloseDeadline{5};

// Closes `socket` (`what` names it in the message a stalled close logs).
// Pipe callbacks are unregistered first: a close left running may still tear
// down pipes after the caller has freed what the callbacks point into.
void CloseSocket(nng_socket socket, const std::string& what);

}  // namespace shoal
