// Stale synchronous parallel (SSP; Ho et al. 2013, the model GeePS §2.3
// implements), kept per server. A worker's clock is the number of its
// updates the server has taken in: a worker that pushed steps 0..c-1 is at
// clock c, about to train step c. With slack s, a read at clock c must see
// every worker's updates of steps up to c-1-s, so it waits until every
// worker's clock is at least c-s. Slack 0 reads as BSP does (every update of
// the steps before); the updates themselves are applied as they arrive.
#pragma once

#include <cstdint>
#include <vector>

namespace shoal {

// The least clock of the workers not done yet. A done worker holds nobody
// back (its last update is in); when every worker is done, the largest clock.
uint64_t SlowestClock(const std::vector<uint64_t>& clocks, const std::vector<bool>& done);

// Whether a read at clock `clock` may be answered while the slowest worker is
// at `slowest`: slowest >= clock − staleness.
bool SspReadable(uint64_t clock, uint64_t slowest, uint64_t staleness);

// How stale answering such a read now is: clock − slowest, the steps of the
// slowest worker the reader goes without (0 when it is not behind). At most
// `staleness` for every read SspReadable lets through.
uint64_t SspStaleness(uint64_t clock, uint64_t slowest);

}  // namespace shoal
