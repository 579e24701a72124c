#include "device/step_memory.h"

namespace shoal {

StepMemory::StepMemory(Device* device, StepOps ops, DeviceMemoryPlan plan, int timeout_ms)
    : device_(device), ops_(std::move(ops)), plan_(std::move(plan)), timeout_ms_(timeout_ms) {}

StepMemory::~StepMemory() {
  // A pass that failed may leave copies queued into memory about to be
  // freed, and tensors bound to it: both end here.
  (void)device_->WaitFor(device_->Mark(), timeout_ms_);
  for (const StepBuffer& b : ops_.buffers) b.tensor->Unbind();
  for (size_t b = 0; b < pinned_.size(); ++b) device_->Free(pinned_[b], ops_.buffers[b].bytes);
  for (void* half : pool_) device_->Free(half, plan_.peak);
}

Status StepMemory::Create(Device* device, StepOps ops, DeviceMemoryPlan plan, int timeout_ms,
                          std::unique_ptr<StepMemory>* out) {
  std::unique_ptr<StepMemory> m(new StepMemory(device, std::move(ops), std::move(plan), timeout_ms));
  m->pinned_.assign(m->ops_.buffers.size(), nullptr);
  for (size_t b = 0; b < m->ops_.buffers.size(); ++b)
    if (m->plan_.pinned[b]) SHOAL_RETURN_IF_ERROR(device->Allocate(m->ops_.buffers[b].bytes, &m->pinned_[b]));
  if (m->plan_.peak > 0)
    for (void*& half : m->pool_) SHOAL_RETURN_IF_ERROR(device->Allocate(m->plan_.peak, &half));
  m->offset_.resize(m->ops_.ops.size());
  for (size_t i = 0; i < m->ops_.ops.size(); ++i) {
    size_t at = 0;
    for (const BufferUse& u : m->ops_.ops[i].uses) {
      m->offset_[i].push_back(at);
      if (!m->plan_.pinned[u.buffer]) at += DeviceAligned(m->ops_.buffers[u.buffer].bytes);
    }
  }
  m->prefetched_.assign(m->ops_.ops.size(), false);
  // The homes copies read and write, each once: on a GPU they are page-locked.
  std::vector<bool> copied(m->ops_.buffers.size(), false);
  for (size_t i = 0; i < m->ops_.ops.size(); ++i)
    for (size_t k = 0; k < m->ops_.ops[i].uses.size(); ++k) {
      const BufferMove& move = m->plan_.moves[i][k];
      if (move.before == BufferMove::Before::kCopyIn || move.copy_out)
        copied[m->ops_.ops[i].uses[k].buffer] = true;
    }
  for (size_t b = 0; b < copied.size(); ++b) {
    Tensor* t = m->ops_.buffers[b].tensor;
    if (copied[b]) device->PinHost(t->home(), t->size() * sizeof(float));
  }
  *out = std::move(m);
  return Status::Ok();
}

float* StepMemory::Slot(size_t op, size_t k) const {
  const int b = ops_.ops[op].uses[k].buffer;
  if (plan_.pinned[b]) return static_cast<float*>(pinned_[b]);
  return reinterpret_cast<float*>(static_cast<char*>(pool_[op % 2]) + offset_[op][k]);
}

// A use may be staged while the pass before computes when its source cannot
// change meanwhile: not a parameter (the exchange writes values just before
// their layer's pass, with train.overlap) and not written by that pass.
bool StepMemory::Prefetchable(size_t op, size_t k) const {
  const int b = ops_.ops[op].uses[k].buffer;
  if (ops_.buffers[b].param) return false;
  if (op == 0) return true;
  for (const BufferUse& u : ops_.ops[op - 1].uses)
    if (u.buffer == b && u.write) return false;
  return true;
}

template <typename Which>
void StepMemory::Stage(size_t op, Which which) {
  const StepOp& o = ops_.ops[op];
  for (size_t k = 0; k < o.uses.size(); ++k) {
    if (!which(k)) continue;
    Tensor* t = ops_.buffers[o.uses[k].buffer].tensor;
    const size_t bytes = t->size() * sizeof(float);
    switch (plan_.moves[op][k].before) {
      case BufferMove::Before::kCopyIn:
        device_->CopyToDevice(Slot(op, k), t->home(), bytes);
        break;
      case BufferMove::Before::kZero:
        device_->Zero(Slot(op, k), bytes);
        break;
      case BufferMove::Before::kNothing:
        break;
    }
  }
}

Status StepMemory::Before(size_t op) {
  const StepOp& o = ops_.ops[op];
  for (size_t k = 0; k < o.uses.size(); ++k) {
    const StepBuffer& b = ops_.buffers[o.uses[k].buffer];
    if (b.tensor->size() * sizeof(float) > b.bytes)
      return Status::InvalidArgument(
          "device memory: '" + b.name + "' holds " + std::to_string(b.tensor->size() * sizeof(float)) +
          " bytes at '" + o.name + "', more than the " + std::to_string(b.bytes) + " it was planned for");
  }
  Stage(op, [&](size_t k) { return !(prefetched_[op] && Prefetchable(op, k)); });
  SHOAL_RETURN_IF_ERROR(device_->ComputeAfter(device_->Mark(), timeout_ms_));
  for (size_t k = 0; k < o.uses.size(); ++k) ops_.buffers[o.uses[k].buffer].tensor->Bind(Slot(op, k));
  // The next pass's staging runs on the copy stream while this one computes.
  if (op + 1 < ops_.ops.size()) {
    Stage(op + 1, [&](size_t k) { return Prefetchable(op + 1, k); });
    prefetched_[op + 1] = true;
  }
  return Status::Ok();
}

Status StepMemory::After(size_t op) {
  const StepOp& o = ops_.ops[op];
  bool outputs = false;
  for (size_t k = 0; k < o.uses.size(); ++k) {
    const StepBuffer& b = ops_.buffers[o.uses[k].buffer];
    if (plan_.moves[op][k].copy_out) {
      device_->CopyToHost(b.tensor->home(), Slot(op, k), b.tensor->size() * sizeof(float));
      outputs = outputs || b.lifetime == StepBuffer::Lifetime::kOutput;
    }
    b.tensor->Unbind();
  }
  // A parameter's gradient is read as soon as its pass is done (train.overlap sends it).
  if (outputs) SHOAL_RETURN_IF_ERROR(device_->WaitFor(device_->Mark(), timeout_ms_));
  return Status::Ok();
}

Status StepMemory::EndStep() {
  SHOAL_RETURN_IF_ERROR(device_->WaitFor(device_->Mark(), timeout_ms_));
  prefetched_.assign(prefetched_.size(), false);
  ++steps_;
  return Status::Ok();
}

}  // namespace shoal
