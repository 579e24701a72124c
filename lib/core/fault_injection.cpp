#include "core/fault_injection.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

namespace shoal {
namespace {

// SHOAL_CRASH_AT's part after "<point>:", or null when it names another point.
const char* SpecFor(const char* point) {
  static const char* spec = std::getenv("SHOAL_CRASH_AT");
  if (!spec) return nullptr;
  const std::string want(spec), name(point);
  if (want.compare(0, name.size() + 1, name + ":") != 0) return nullptr;
  return spec + name.size() + 1;
}

}  // namespace

bool CrashPointArmed(const char* point) { return SpecFor(point) != nullptr; }

void CrashPoint(const char* point) {
  const char* rest = SpecFor(point);
  if (!rest) return;
  static std::atomic<int> hits{0};
  if (++hits != std::atoi(rest)) return;
  const char* file = std::strchr(rest, ':');
  if (file) {
    const int fd = ::open(file + 1, O_CREAT | O_EXCL | O_WRONLY, 0644);
    if (fd < 0) return;  // another process of the run crashed there already
    ::close(fd);
  }
  _exit(137);
}

}  // namespace shoal
