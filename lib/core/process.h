// A process's ties to the run that started it.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace shoal {

// Makes this process end (SIGTERM) the moment process `parent` does, by
// any signal, SIGKILL included (Linux's parent-death signal); an error if
// `parent` is not this process's parent any more (it died first).
Status DieWithParent(int parent);

// The 64-bit incarnation a supervisor's token names (never 0); a fresh
// random one for an empty token.
uint64_t IncarnationOf(const std::string& token);

}  // namespace shoal
