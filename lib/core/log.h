// The one way lib/ and the tools write to standard error: one line per
// message, prefixed with the tool's name ("dl-server: ..."). Results go to
// standard output through core/output.h, never here.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "core/mutex.h"

namespace shoal {

// The name every line starts with (each main sets it once; default "shoal").
void SetLogName(const std::string& tool);
const std::string& LogName();
// Writes "tool: message" and a newline; safe from any thread.
void Log(const std::string& message);
// A bug of ours (never input): logs "tool: internal error: message" and aborts.
[[noreturn]] void Fatal(const std::string& message);

// Logs at most `burst` messages, then one per `interval`, saying how many
// were left out in between: a peer that sends a million bad requests costs
// a few lines, and the count is still there.
class RateLimitedLog {
 public:
  using Clock = std::chrono::steady_clock::time_point (*)();
  static std::chrono::steady_clock::time_point SteadyNow() { return std::chrono::steady_clock::now(); }
  // `clock` is the time the intervals are measured in (a test's own, where
  // the steady clock's would make what is left out depend on the machine's load).
  explicit RateLimitedLog(int burst = 10, std::chrono::milliseconds interval = std::chrono::seconds(1),
                          Clock clock = SteadyNow)
      : burst_(burst), interval_(interval), clock_(clock) {}
  void Log(const std::string& message);
  // Says how many were left out since the last line, where any were: at the
  // end of a run, where no later line would (a burst shorter than `interval`).
  void Flush();
  uint64_t suppressed() const;

 private:
  mutable Mutex mu_;
  const int burst_;
  const std::chrono::milliseconds interval_;
  const Clock clock_;
  int logged_ GUARDED_BY(mu_) = 0;
  uint64_t suppressed_ GUARDED_BY(mu_) = 0;
  uint64_t suppressed_total_ GUARDED_BY(mu_) = 0;
  std::chrono::steady_clock::time_point last_ GUARDED_BY(mu_){};
};

}  // namespace shoal
