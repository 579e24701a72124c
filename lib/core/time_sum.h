// Where the time goes: durations summed per phase (a steady clock read at
// each end: cheap enough for every request), safe to add to from several
// threads, as a worker's and a server's own counters of their busy parts.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace shoal {

class TimeSum {
 public:
  void Add(std::chrono::steady_clock::duration d) {
    ns_ += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
  }
  double seconds() const { return static_cast<double>(ns_.load()) * 1e-9; }

 private:
  std::atomic<uint64_t> ns_{0};
};

// Adds the time from its making to the end of its scope to `sum`.
class Timed {
 public:
  explicit Timed(TimeSum* sum) : sum_(sum), start_(std::chrono::steady_clock::now()) {}
  ~Timed() { sum_->Add(std::chrono::steady_clock::now() - start_); }
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;

 private:
  TimeSum* sum_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace shoal
