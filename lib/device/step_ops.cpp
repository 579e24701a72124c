#include "device/step_ops.h"

namespace shoal {

int StepOps::AddBuffer(const std::string& name, StepBuffer::Lifetime lifetime, bool param, Tensor* tensor) {
  if (tensor) {
    auto known = index_.find(tensor);
    if (known != index_.end()) return known->second;
    index_[tensor] = static_cast<int>(buffers.size());
  }
  StepBuffer b;
  b.name = name;
  b.lifetime = lifetime;
  b.param = param;
  b.bytes = tensor ? tensor->size() * sizeof(float) : 0;
  b.tensor = tensor;
  buffers.push_back(std::move(b));
  return static_cast<int>(buffers.size() - 1);
}

void StepOps::Use(size_t op, int buffer, bool read, bool write) {
  if (buffers[buffer].bytes == 0) return;
  for (BufferUse& u : ops[op].uses)
    if (u.buffer == buffer) {
      u.read = u.read || read;
      u.write = u.write || write;
      return;
    }
  ops[op].uses.push_back({buffer, read, write});
}

size_t StepOps::TotalBytes() const {
  size_t total = 0;
  for (const StepBuffer& b : buffers) total += b.bytes;
  return total;
}

}  // namespace shoal
