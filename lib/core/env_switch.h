// A kernel turned off from the environment (SHOAL_ONEDNN=0,
// SHOAL_WINOGRAD=off): for comparing kernels, and for tests that run both ways.
#pragma once

namespace shoal {

// False when the variable `name` is "0" or "off"; true otherwise, unset too.
bool EnvSwitchOn(const char* name);

}  // namespace shoal
