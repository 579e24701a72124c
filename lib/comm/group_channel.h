// Features and their gradients between the workers of one group: what
// SINGA's bridge layers carry. Each worker listens (pull) on its endpoint in
// the plan and pushes to every peer's. A send is queued and returns at once,
// so the transfer goes on while the worker computes; a receive waits at most
// the timeout and says which peer and which block it waited for.
#pragma once

#include <nng/nng.h>

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/status.h"
#include "plan/plan.h"

namespace shoal {

class GroupChannel {
 public:
  GroupChannel() = default;
  GroupChannel(const GroupChannel&) = delete;
  GroupChannel& operator=(const GroupChannel&) = delete;
  ~GroupChannel();

  // Listens on worker `worker`'s endpoint and dials its group's other ranks.
  Status Open(const Plan& plan, int worker, int timeout_ms);

  // `tag` names the block (which edge, which direction) within step `step`.
  Status Send(int rank, uint32_t tag, uint64_t step, const float* data, size_t count);
  // Fills `data` with exactly `count` floats from rank `rank`; `what` says
  // what they are in an error ("features of layer 'fc2'").
  Status Receive(int rank, uint32_t tag, uint64_t step, float* data, size_t count, const std::string& what);

  int rank() const { return rank_; }
  size_t group_size() const { return push_.size(); }

 private:
  using Key = std::tuple<uint32_t, uint32_t, uint64_t>;  // sender, tag, step

  const Plan* plan_ = nullptr;
  int worker_ = 0, rank_ = 0, first_ = 0, timeout_ms_ = 0;
  uint64_t plan_hash_ = 0;
  nng_socket pull_{};
  bool pull_open_ = false;
  std::vector<nng_socket> push_;  // per rank of the group; its own is unused
  std::vector<bool> push_open_;
  std::map<Key, nng_msg*> early_;  // arrived before they were asked for
};

}  // namespace shoal
