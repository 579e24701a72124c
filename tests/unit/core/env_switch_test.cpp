#include "core/env_switch.h"

#include <doctest/doctest.h>
#include <stdlib.h>

#include <initializer_list>

namespace shoal {
namespace {

TEST_CASE("an environment switch is off only at 0 or off") {
  const char* name = "SHOAL_TEST_SWITCH";
  unsetenv(name);
  CHECK(EnvSwitchOn(name));
  for (const char* off : {"0", "off"}) {
    setenv(name, off, 1);
    CHECK_FALSE(EnvSwitchOn(name));
  }
  for (const char* on : {"1", "on", "", "00", "OFF"}) {
    setenv(name, on, 1);
    CHECK(EnvSwitchOn(name));
  }
  unsetenv(name);
}

}  // namespace
}  // namespace shoal
