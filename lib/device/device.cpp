#include "device/device.h"

#include <cstdio>

namespace shoal {

std::string Mib(size_t bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.2f MiB", bytes / 1048576.0);
  return s;
}

Status Device::Allocate(size_t bytes, void** out) {
  bytes = DeviceAligned(bytes);
  if (bytes > budget_ - in_use_)
    return Status::InvalidArgument(name() + ": " + std::to_string(bytes) +
                                   " bytes more would pass the budget of " + Mib(budget_) + " (" +
                                   Mib(in_use_) + " in use)");
  SHOAL_RETURN_IF_ERROR(DoAllocate(bytes, out));
  in_use_ += bytes;
  if (in_use_ > peak_) peak_ = in_use_;
  return Status::Ok();
}

void Device::Free(void* memory, size_t bytes) {
  if (!memory) return;
  DoFree(memory);
  in_use_ -= DeviceAligned(bytes);
}

void Device::CopyToDevice(void* dst, const void* src, size_t bytes) {
  to_device_ += bytes;
  DoCopyToDevice(dst, src, bytes);
}

void Device::CopyToHost(void* dst, const void* src, size_t bytes) {
  to_host_ += bytes;
  DoCopyToHost(dst, src, bytes);
}

void Device::Zero(void* dst, size_t bytes) { DoZero(dst, bytes); }

}  // namespace shoal
