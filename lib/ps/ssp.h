// Stale synchronous parallel (SSP; Ho et al. 2013, the model GeePS §2.3
// implements), kept per server. Updates are applied as async applies them. A
// worker's clock is the number of its steps the server has taken in (every
// layer of them): a worker that pushed steps 0..c-1 is at clock c, about to
// train step c. With slack s, a read at clock c must see every worker's
// updates of steps up to c-1-s, so it waits until every worker's clock is at
// least c-s. Slack 0 reads as BSP does (every update of the steps before).
#pragma once

#include <cstdint>
#include <vector>

#include "ps/async.h"

namespace shoal {

// The least clock of the workers not stopped (done, or another server
// group's). A done worker holds nobody back (its last update is in); when
// every worker is stopped, the largest clock.
uint64_t SlowestClock(const std::vector<uint64_t>& clocks, const std::vector<bool>& stopped);

// Whether a read at clock `clock` may be answered while the slowest worker is
// at `slowest`: slowest >= clock − staleness.
bool SspReadable(uint64_t clock, uint64_t slowest, uint64_t staleness);

// How stale answering such a read now is: clock − slowest, the steps of the
// slowest worker the reader goes without (0 when it is not behind). At most
// `staleness` for every read SspReadable lets through.
uint64_t SspStaleness(uint64_t clock, uint64_t slowest);

class SspConsistency : public AsyncConsistency {
 public:
  using AsyncConsistency::AsyncConsistency;
  // A worker's clock counts its updates: one past it would skip a clock.
  // InvalidArgument for a step past the worker's clock here.
  Status CheckUpdate(const ServerTable& table, int worker, uint64_t step,
                     const std::vector<int>& layers) const override;
  bool Ready(const ServerTable& table, const Read& read) const override;
  // No worker reads at a clock past the fastest one's next.
  // InvalidArgument for a read past it.
  Status CheckRead(const ServerTable& table, const Read& read) const override;
  void OnPark(const Read& read) override { ++stats_->ssp_waits; }
  void OnAnswer(const ServerTable& table, const Read& read) override;
  // The workers whose clocks are too far behind the read's.
  std::string Awaited(const ServerTable& table, const Read& read) const override;

 private:
  uint64_t Slowest(const ServerTable& table) const;
};

}  // namespace shoal
