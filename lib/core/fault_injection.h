// Deterministic crash points, for tests of crash safety: with
// SHOAL_CRASH_AT="<point>:<n>" in the environment, the n-th time the process
// reaches CrashPoint("<point>") it dies at once, as kill -9 would leave it
// (exit status 137, no cleanup, no flushing). "<point>:<n>:<file>" crashes
// only the first process of a run to get there: the one that creates <file>
// (a supervisor's restart of it goes on). Without the variable it is a no-op.
#pragma once

namespace shoal {

void CrashPoint(const char* point);
// Whether SHOAL_CRASH_AT names `point`: a caller that must make the moment
// exact (a message delivered before the crash) does so only then.
bool CrashPointArmed(const char* point);

}  // namespace shoal
