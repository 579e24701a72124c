#include "ps/parked.h"

namespace shoal {

int ParkedRequests::AnswerReady(const std::function<bool(const Parked&)>& ready,
                                const std::function<void(const Parked&)>& answer) {
  std::vector<Parked> still;
  int done = 0;
  for (const auto& p : parked_) {
    if (!ready(p)) {
      still.push_back(p);
      continue;
    }
    answer(p);
    done += p.done;
  }
  parked_.swap(still);
  return done;
}

size_t ParkedRequests::CountFrom(uint32_t sender) const {
  size_t n = 0;
  for (const auto& p : parked_) n += p.sender == sender;
  return n;
}

void ParkedRequests::Expire(Clock::time_point now, const std::function<void(const Parked&)>& expire) {
  DropIf([&](const Parked& p) { return p.deadline <= now; }, expire);
}

void ParkedRequests::DropFrom(uint32_t sender, const std::function<void(const Parked&)>& drop) {
  DropIf([&](const Parked& p) { return p.sender == sender; }, drop);
}

void ParkedRequests::DropAll(const std::function<void(const Parked&)>& drop) {
  DropIf([](const Parked&) { return true; }, drop);
}

void ParkedRequests::DropIf(const std::function<bool(const Parked&)>& which,
                            const std::function<void(const Parked&)>& drop) {
  std::vector<Parked> still;
  for (const auto& p : parked_) {
    if (which(p))
      drop(p);
    else
      still.push_back(p);
  }
  parked_.swap(still);
}

}  // namespace shoal
