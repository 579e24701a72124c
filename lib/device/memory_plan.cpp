#include "device/memory_plan.h"

#include <algorithm>

#include "device/device.h"

namespace shoal {

namespace {

using Lifetime = StepBuffer::Lifetime;

struct Peak {
  size_t bytes = 0;
  int op = -1;
};

Peak PeakOf(const StepOps& ops, const std::vector<bool>& pinned) {
  Peak peak;
  for (size_t i = 0; i < ops.ops.size(); ++i) {
    size_t bytes = 0;
    for (const BufferUse& u : ops.ops[i].uses)
      if (!pinned[u.buffer]) bytes += DeviceAligned(ops.buffers[u.buffer].bytes);
    if (peak.op < 0 || bytes > peak.bytes) peak = {bytes, static_cast<int>(i)};
  }
  return peak;
}

bool Local(const StepBuffer& b) { return !b.param; }

}  // namespace

std::vector<std::vector<BufferMove>> BufferMoves(const StepOps& ops, const std::vector<bool>& pinned) {
  // Whether a buffer's values are read by a later use in the step (so a
  // pass that writes it must send them home), and whether a use is the first.
  std::vector<std::vector<BufferMove>> moves(ops.ops.size());
  std::vector<bool> seen(ops.buffers.size(), false);
  std::vector<int> last_read(ops.buffers.size(), -1);
  for (size_t i = 0; i < ops.ops.size(); ++i)
    for (const BufferUse& u : ops.ops[i].uses)
      if (u.read) last_read[u.buffer] = static_cast<int>(i);
  for (size_t i = 0; i < ops.ops.size(); ++i) {
    for (const BufferUse& u : ops.ops[i].uses) {
      const StepBuffer& b = ops.buffers[u.buffer];
      const bool first = !seen[u.buffer];
      seen[u.buffer] = true;
      BufferMove m;
      if (b.lifetime == Lifetime::kGradient && first)
        m.before = BufferMove::Before::kZero;  // what clearing every gradient before backprop would give
      else if (pinned[u.buffer])
        m.before = b.lifetime == Lifetime::kInput && first ? BufferMove::Before::kCopyIn
                                                           : BufferMove::Before::kNothing;
      else
        m.before = u.read ? BufferMove::Before::kCopyIn : BufferMove::Before::kNothing;
      if (u.write) {
        const bool outside = b.lifetime == Lifetime::kInput || b.lifetime == Lifetime::kOutput;
        m.copy_out = outside || (!pinned[u.buffer] && last_read[u.buffer] > static_cast<int>(i));
      }
      moves[i].push_back(m);
    }
  }
  return moves;
}

Status PlanDeviceMemory(const StepOps& ops, size_t budget, DeviceMemoryPlan* plan) {
  DeviceMemoryPlan p;
  p.budget = budget;
  p.pinned.assign(ops.buffers.size(), false);
  Peak peak = PeakOf(ops, p.pinned);
  const size_t least = 2 * peak.bytes + ops.scratch_bytes;
  if (budget < least)
    return Status::InvalidArgument(
        "train.device_memory_mb: a budget of " + Mib(budget) +
        " is below twice the step's peak of actively used data (" + Mib(peak.bytes) + " at '" +
        ops.ops[peak.op].name + "')" +
        (ops.scratch_bytes ? " and the " + Mib(ops.scratch_bytes) + " kept for the convolutions' workspace" +
                                 std::string(": the two need at least ")
                           : std::string(": the access pool alone needs at least ")) +
        std::to_string(least) + " bytes (" + Mib(least) + ")");
  budget -= ops.scratch_bytes;
  // Pinning `b` fits when it and the pool it leaves fit the budget.
  auto try_pin = [&](int b) {
    p.pinned[b] = true;
    const Peak lower = PeakOf(ops, p.pinned);
    const size_t bytes = DeviceAligned(ops.buffers[b].bytes);
    if (p.pinned_bytes + bytes + 2 * lower.bytes <= budget) {
      p.pinned_bytes += bytes;
      peak = lower;
      return true;
    }
    p.pinned[b] = false;
    return false;
  };
  // Local data used at the peak, largest first, while the peak keeps falling.
  for (bool pinned_one = true; pinned_one && peak.bytes > 0;) {
    pinned_one = false;
    std::vector<int> at_peak;
    for (const BufferUse& u : ops.ops[peak.op].uses)
      if (!p.pinned[u.buffer] && Local(ops.buffers[u.buffer])) at_peak.push_back(u.buffer);
    std::stable_sort(at_peak.begin(), at_peak.end(),
                     [&](int a, int b) { return ops.buffers[a].bytes > ops.buffers[b].bytes; });
    for (int b : at_peak)
      if (try_pin(b)) {
        pinned_one = true;
        break;
      }
  }
  // Then whatever else fits: local data first, then parameters, largest first.
  for (bool param : {false, true}) {
    std::vector<int> rest;
    for (size_t b = 0; b < ops.buffers.size(); ++b)
      if (!p.pinned[b] && ops.buffers[b].param == param && ops.buffers[b].bytes > 0)
        rest.push_back(static_cast<int>(b));
    std::stable_sort(rest.begin(), rest.end(),
                     [&](int a, int b) { return ops.buffers[a].bytes > ops.buffers[b].bytes; });
    for (int b : rest) try_pin(b);
  }
  p.peak = peak.bytes;
  p.peak_op = peak.op;
  p.moves = BufferMoves(ops, p.pinned);
  for (size_t i = 0; i < ops.ops.size(); ++i)
    for (size_t k = 0; k < ops.ops[i].uses.size(); ++k) {
      const size_t bytes = ops.buffers[ops.ops[i].uses[k].buffer].bytes;
      if (p.moves[i][k].before == BufferMove::Before::kCopyIn) p.bytes_to_device += bytes;
      if (p.moves[i][k].copy_out) p.bytes_to_host += bytes;
    }
  *plan = std::move(p);
  return Status::Ok();
}

}  // namespace shoal
