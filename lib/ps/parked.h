// Requests a server answers later: reads waiting for a version or a clock
// (lib/ps/consistency.h's Ready), and workers' `done`, answered when every
// worker is done. Each holds one of the server's request slots until it is
// answered, so the list is bounded and every entry has a deadline.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "ps/consistency.h"

namespace shoal {

// The requests a server holds to answer later, each with its slot and deadline.
class ParkedRequests {
 public:
  using Clock = std::chrono::steady_clock;
  struct Parked {
    int slot;
    Read read;
    bool done;  // a worker's done: answered when every worker is done
    Clock::time_point deadline;
    uint32_t sender;  // who asked (a worker, or a tool)
  };

  bool empty() const { return parked_.empty(); }
  size_t size() const { return parked_.size(); }
  const std::vector<Parked>& all() const { return parked_; }
  void Park(Parked parked) { parked_.push_back(std::move(parked)); }
  // How many `sender` has waiting.
  size_t CountFrom(uint32_t sender) const;
  // Answers (and drops) every request `ready` says can be answered now, in
  // the order they came; returns how many done requests were answered.
  int AnswerReady(const std::function<bool(const Parked&)>& ready,
                  const std::function<void(const Parked&)>& answer);
  // Drops every request whose deadline has passed at `now`, handing each to `expire`.
  void Expire(Clock::time_point now, const std::function<void(const Parked&)>& expire);
  // Drops every request of `sender`, handing each to `drop` (a new life of it has come).
  void DropFrom(uint32_t sender, const std::function<void(const Parked&)>& drop);
  // Drops every request, handing each to `drop` (the server is stopping).
  void DropAll(const std::function<void(const Parked&)>& drop);

 private:
  void DropIf(const std::function<bool(const Parked&)>& which,
              const std::function<void(const Parked&)>& drop);

  std::vector<Parked> parked_;
};

}  // namespace shoal
