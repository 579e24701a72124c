// Runs a step's passes on device memory as a DeviceMemoryPlan places them
// (GeePS §3.3, §4.4): pinned buffers have device memory of their own for the
// whole run; the others live in host memory (their tensors' homes) and pass
// through the access pool, two halves of the peak size used by alternate
// passes, so that while one pass computes, the copies for the next one run
// on the device's copy stream (double buffering). Before a pass its buffers
// are staged and their tensors bound to device memory; after it, what must
// go home is queued back and the tensors unbound.
#pragma once

#include <memory>
#include <vector>

#include "device/device.h"
#include "device/memory_plan.h"
#include "device/step_ops.h"

namespace shoal {

class StepMemory {
 public:
  // Takes the pinned buffers and the pool from `device` (which outlives it).
  static Status Create(Device* device, StepOps ops, DeviceMemoryPlan plan, int timeout_ms,
                       std::unique_ptr<StepMemory>* out);
  ~StepMemory();

  // Around pass `op` of the sequence, in order.
  Status Before(size_t op);
  Status After(size_t op);
  // After the last pass: every copy done, every home holding what it should.
  Status EndStep();

  const StepOps& ops() const { return ops_; }
  const DeviceMemoryPlan& plan() const { return plan_; }
  uint64_t steps() const { return steps_; }

 private:
  StepMemory(Device* device, StepOps ops, DeviceMemoryPlan plan, int timeout_ms);
  // Where use `k` of pass `op` is on the device.
  float* Slot(size_t op, size_t k) const;
  // Queues the staging of pass `op`'s uses that `which` selects.
  template <typename Which>
  void Stage(size_t op, Which which);
  bool Prefetchable(size_t op, size_t k) const;

  Device* device_;
  StepOps ops_;
  DeviceMemoryPlan plan_;
  int timeout_ms_;
  std::vector<void*> pinned_;                // by buffer: its device memory, or null
  void* pool_[2] = {nullptr, nullptr};       // the access pool's halves, plan_.peak bytes each
  std::vector<std::vector<size_t>> offset_;  // by op, by use: where in its half (unpinned uses)
  std::vector<bool> prefetched_;  // by op: its prefetchable uses were queued during the pass before
  uint64_t steps_ = 0;
};

}  // namespace shoal
