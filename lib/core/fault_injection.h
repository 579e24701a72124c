// Deterministic crash points, for tests of crash safety: with
// SHOAL_CRASH_AT="<point>:<n>" in the environment, the n-th time the process
// reaches CrashPoint("<point>") it dies at once, as kill -9 would leave it
// (exit status 137, no cleanup, no flushing). Without the variable it is a no-op.
#pragma once

namespace shoal {

void CrashPoint(const char* point);

}  // namespace shoal
