// A process's ties to the run that started it.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace shoal {

// Makes this process end (SIGKILL, which a stopped process cannot ignore)
// the moment process `parent` does, by any signal (Linux's parent-death
// signal); an error if `parent` is not this process's parent any more (it
// died first). Checkpoints are written atomically, so nothing written is lost.
Status DieWithParent(int parent);

// The 64-bit incarnation a supervisor's token names (never 0); a fresh
// random one for an empty token.
uint64_t IncarnationOf(const std::string& token);

}  // namespace shoal
