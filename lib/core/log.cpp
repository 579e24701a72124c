#include "core/log.h"

#include <cstdio>
#include <cstdlib>

namespace shoal {
namespace {

std::mutex& LogMutex() {
  static std::mutex mu;
  return mu;
}

std::string& Name() {
  static std::string name = "shoal";
  return name;
}

}  // namespace

void SetLogName(const std::string& tool) {
  std::lock_guard<std::mutex> lock(LogMutex());
  Name() = tool;
}

const std::string& LogName() { return Name(); }

void Log(const std::string& message) {
  std::lock_guard<std::mutex> lock(LogMutex());
  const std::string line = Name() + ": " + message + "\n";
  std::fputs(line.c_str(), stderr);  // unbuffered: nothing more to check
}

void Fatal(const std::string& message) {
  Log("internal error: " + message);
  std::abort();
}

void RateLimitedLog::Log(const std::string& message) {
  std::string note;
  {
    MutexLock lock(&mu_);
    const auto now = clock_();
    if (logged_ >= burst_ && now - last_ < interval_) {
      ++suppressed_;
      ++suppressed_total_;
      return;
    }
    ++logged_;
    last_ = now;
    if (suppressed_ > 0) note = " (and " + std::to_string(suppressed_) + " more like it left out)";
    suppressed_ = 0;
  }
  shoal::Log(message + note);
}

void RateLimitedLog::Flush() {
  uint64_t left_out = 0;
  {
    MutexLock lock(&mu_);
    left_out = suppressed_;
    suppressed_ = 0;
  }
  if (left_out > 0) shoal::Log("(and " + std::to_string(left_out) + " more like it left out)");
}

uint64_t RateLimitedLog::suppressed() const {
  MutexLock lock(&mu_);
  return suppressed_total_;
}

}  // namespace shoal
