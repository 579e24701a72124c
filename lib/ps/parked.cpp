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
  std::vector<Parked> still;
  for (const auto& p : parked_) {
    if (p.deadline <= now) expire(p);
    else still.push_back(p);
  }
  parked_.swap(still);
}

void ParkedRequests::DropAll(const std::function<void(const Parked&)>& drop) {
  for (const auto& p : parked_) drop(p);
  parked_.clear();
}

}  // namespace shoal
