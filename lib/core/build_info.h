// The commit this binary was built from; every output record carries it.
#pragma once

namespace shoal {
// Defined in the build directory's build_info.cpp, written at configure time
// (only that file recompiles when the commit changes).
const char* BuildCommit();
}  // namespace shoal
