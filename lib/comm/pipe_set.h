// The open pipes (connections) of an NNG socket, kept from its pipe events,
// for the questions a client and a server ask of them: is any open, since
// when has none been, was this one closed already.
//
// NNG 1.5.2 reports a pipe's removal (REM_POST) from its reaper the moment the
// pipe is closed: for a pipe closed during its handshake, without ever
// reporting its addition (ADD_POST), and for one closed as it was being added,
// before that addition. A count would drift; an addition after its own removal
// would leave a pipe that is not there. So the set remembers the pipes it has
// seen removed (the most recent kRemembered of them: a late addition follows
// its removal at once, and a request handled after its pipe's close, within
// the same instant).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <set>

#include "core/mutex.h"

namespace shoal {

class PipeSet {
 public:
  static constexpr size_t kRemembered = 1024;

  void Added(uint32_t pipe);
  void Removed(uint32_t pipe);
  bool Empty() const;
  // Waits until no pipe is open, or `limit` has passed; returns Empty().
  bool WaitEmpty(std::chrono::milliseconds limit) const;
  // Whether `pipe` has been removed (closed), as far as the last kRemembered removals tell.
  bool Closed(uint32_t pipe) const;
  // How long no pipe has been open, where one was once; zero while one is or
  // none ever was.
  std::chrono::milliseconds EmptyFor() const;

 private:
  mutable Mutex mu_;
  std::set<uint32_t> open_ GUARDED_BY(mu_);
  std::set<uint32_t> removed_ GUARDED_BY(mu_);
  std::deque<uint32_t> removed_order_ GUARDED_BY(mu_);  // oldest first, to forget beyond kRemembered
  bool ever_ GUARDED_BY(mu_) = false;
  std::chrono::steady_clock::time_point empty_since_ GUARDED_BY(mu_){};
};

}  // namespace shoal
