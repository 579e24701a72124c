// Asynchronous updates (Downpour, SINGA's async groups): each worker's
// gradients of a layer are applied the moment they arrive, as that worker's
// share of the average (scaled by the holders of each slice over the workers
// served), and reads are answered at once with whatever the table holds.
#pragma once

#include "ps/consistency.h"

namespace shoal {

class AsyncConsistency : public Consistency {
 public:
  AsyncConsistency(const ServerConfig& config, ServerStats* stats) : config_(config), stats_(stats) {}
  void TakeUpdate(ServerTable& table, int index, int worker, uint64_t step,
                  const std::vector<const EntryView*>& entries) override;

 protected:
  const ServerConfig& config_;
  ServerStats* stats_;
};

}  // namespace shoal
