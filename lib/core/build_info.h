// The commit this binary was built from; every output record carries it.
#pragma once

namespace shoal {
inline const char* BuildCommit() { return SHOAL_COMMIT; }
}  // namespace shoal
