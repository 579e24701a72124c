#include "core/fault_injection.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>

namespace shoal {

void CrashPoint(const char* point) {
  static const char* spec = std::getenv("SHOAL_CRASH_AT");
  if (!spec) return;
  static std::atomic<int> hits{0};
  std::string want(spec), name(point);
  if (want.compare(0, name.size() + 1, name + ":") != 0) return;
  if (++hits == std::atoi(want.c_str() + name.size() + 1)) _exit(137);
}

}  // namespace shoal
