#include "comm/pipe_set.h"

#include <thread>

namespace shoal {

void PipeSet::Added(uint32_t pipe) {
  MutexLock lock(&mu_);
  if (removed_.count(pipe)) return;  // closed before its addition was reported
  open_.insert(pipe);
  ever_ = true;
}

void PipeSet::Removed(uint32_t pipe) {
  MutexLock lock(&mu_);
  if (removed_.insert(pipe).second) {
    removed_order_.push_back(pipe);
    if (removed_order_.size() > kRemembered) {
      removed_.erase(removed_order_.front());
      removed_order_.pop_front();
    }
  }
  if (open_.erase(pipe) == 1 && open_.empty()) empty_since_ = std::chrono::steady_clock::now();
}

bool PipeSet::Empty() const {
  MutexLock lock(&mu_);
  return open_.empty();
}

bool PipeSet::WaitEmpty(std::chrono::milliseconds limit) const {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!Empty()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

bool PipeSet::Closed(uint32_t pipe) const {
  MutexLock lock(&mu_);
  return removed_.count(pipe) > 0;
}

std::chrono::milliseconds PipeSet::EmptyFor() const {
  MutexLock lock(&mu_);
  if (!ever_ || !open_.empty()) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               empty_since_);
}

}  // namespace shoal
