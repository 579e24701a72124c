// Sums over the workers of a group that each hold their own records: what
// synchronised batch norm needs of its statistics. Each worker sends its
// values to every other over the group's channel and adds all of them in
// rank order, so that every worker ends with the same bits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/group_channel.h"
#include "core/status.h"

namespace shoal {

class GroupSum {
 public:
  explicit GroupSum(GroupChannel* channel) : channel_(channel) {}

  // Starts training step `step`: its exchanges are numbered from the first.
  // Every worker of the group makes the same exchanges in the same order.
  void BeginStep(uint64_t step);
  // Replaces `values` by their sums over the group; `what` names them in an
  // error. A failure (a peer that never sent, or sent another count) is kept
  // in status(); later calls of the step then do nothing, and the pass's
  // results are not to be used.
  void Sum(std::vector<double>* values, const std::string& what);
  const Status& status() const { return status_; }

 private:
  // Above every connection layer's tags (lib/net/connection_layer.h).
  static constexpr uint32_t kFirstTag = 1u << 31;

  GroupChannel* channel_;
  uint64_t step_ = 0;
  uint32_t next_ = 0;
  Status status_;
  std::vector<float> sent_, received_;
};

}  // namespace shoal
