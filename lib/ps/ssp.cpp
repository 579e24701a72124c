#include "ps/ssp.h"

#include <algorithm>
#include <cstddef>
#include <limits>

namespace shoal {

uint64_t SlowestClock(const std::vector<uint64_t>& clocks, const std::vector<bool>& stopped) {
  uint64_t slowest = std::numeric_limits<uint64_t>::max();
  for (size_t w = 0; w < clocks.size(); ++w)
    if (!stopped[w] && clocks[w] < slowest) slowest = clocks[w];
  return slowest;
}

// Written without subtracting from `clock`, which may be below the slack.
bool SspReadable(uint64_t clock, uint64_t slowest, uint64_t staleness) {
  return slowest >= clock || clock - slowest <= staleness;
}

uint64_t SspStaleness(uint64_t clock, uint64_t slowest) { return clock > slowest ? clock - slowest : 0; }

uint64_t SspConsistency::Slowest(const ServerTable& table) const {
  std::vector<bool> stopped(config_.workers);
  for (int w = 0; w < config_.workers; ++w) stopped[w] = table.done()[w] || !config_.serves[w];
  return SlowestClock(table.NextSteps(), stopped);
}

Status SspConsistency::CheckUpdate(const ServerTable& table, int worker, uint64_t step,
                                   const std::vector<int>& layers) const {
  const uint64_t clock = table.NextStepOf(worker, layers);
  if (step <= clock) return Status::Ok();
  return Status::InvalidArgument("update for step " + std::to_string(step) + " but worker " +
                                 std::to_string(worker) + "'s clock here is " + std::to_string(clock));
}

Status SspConsistency::CheckRead(const ServerTable& table, const Read& read) const {
  uint64_t fastest = 0;
  for (int w = 0; w < config_.workers; ++w)
    if (config_.serves[w]) fastest = std::max(fastest, table.NextStepOf(w));
  if (read.at <= fastest + 1) return Status::Ok();
  return Status::InvalidArgument("a read at clock " + std::to_string(read.at) +
                                 " while the fastest worker is at " + std::to_string(fastest) +
                                 ": no worker reads past its next clock");
}

bool SspConsistency::Ready(const ServerTable& table, const Read& read) const {
  return SspReadable(read.at, Slowest(table), config_.staleness);
}

std::string SspConsistency::Awaited(const ServerTable& table, const Read& read) const {
  if (read.at < config_.staleness) return "";
  const uint64_t needed = read.at - config_.staleness;
  std::string behind;
  for (int w = 0; w < config_.workers; ++w)
    if (config_.serves[w] && !table.done()[w] && table.NextStepOf(w) < needed)
      behind += (behind.empty() ? "" : ", ") + std::string("worker ") + std::to_string(w) + " at " +
                std::to_string(table.NextStepOf(w));
  if (behind.empty()) return "";
  return "a read at clock " + std::to_string(read.at) + " with staleness " +
         std::to_string(config_.staleness) + " needs every worker's clock at " + std::to_string(needed) +
         " or more: " + behind;
}

void SspConsistency::OnAnswer(const ServerTable& table, const Read& read) {
  stats_->max_staleness_served =
      std::max(stats_->max_staleness_served, SspStaleness(read.at, Slowest(table)));
}

}  // namespace shoal
