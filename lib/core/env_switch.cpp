#include "core/env_switch.h"

#include <cstdlib>
#include <cstring>

namespace shoal {

bool EnvSwitchOn(const char* name) {
  const char* v = std::getenv(name);
  return !(v && (std::strcmp(v, "0") == 0 || std::strcmp(v, "off") == 0));
}

}  // namespace shoal
