// GeePS's GPU/CPU data placement (§4.4, Algorithm 1) over one step's
// operation sequence: which buffers stay pinned in device memory and which
// live in host memory and pass through the access pool, a double buffer of
// twice the peak size of the actively used data; and what that moves each step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "device/step_ops.h"

namespace shoal {

// What happens to one buffer around one pass, given the placement.
struct BufferMove {
  enum class Before { kNothing, kCopyIn, kZero };
  Before before = Before::kNothing;
  bool copy_out = false;  // back to host memory after the pass
};

struct DeviceMemoryPlan {
  size_t budget = 0;
  std::vector<bool> pinned;  // by buffer
  size_t pinned_bytes = 0;
  size_t peak = 0;  // the largest pass's bytes of buffers not pinned: one half of the pool
  int peak_op = -1;
  std::vector<std::vector<BufferMove>> moves;  // by op, by use
  uint64_t bytes_to_device = 0;                // a step's copies, predicted
  uint64_t bytes_to_host = 0;

  size_t pool_bytes() const { return 2 * peak; }
  size_t device_bytes() const { return pinned_bytes + pool_bytes(); }
};

// Algorithm 1 under `budget` bytes, less the ops' scratch_bytes: everything
// starts in host memory; a budget below twice the peak (and the scratch) is
// refused, naming the minimum; then local
// data used at the peak is pinned while that fits (each one pinned lowers the
// peak, and the pool with it), then more local data, largest first, then
// parameter data.
Status PlanDeviceMemory(const StepOps& ops, size_t budget, DeviceMemoryPlan* plan);

// The moves of every use of every op with buffers pinned as `pinned` say.
std::vector<std::vector<BufferMove>> BufferMoves(const StepOps& ops, const std::vector<bool>& pinned);

}  // namespace shoal
