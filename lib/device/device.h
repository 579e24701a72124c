// The memory a step's data lives in while layers compute on it, behind the
// few calls GeePS's memory manager needs (§3.3, §4.4): allocate and free
// under a budget, copies to and from host memory queued in order on one
// copy stream beside the computation, and waits on marks in that stream.
// HostDevice (host_device.h) holds the budget in host memory and copies on a
// thread: the form the manager is tested in here. CudaDevice (cuda_device.h)
// is GPU memory, copied on a CUDA stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace shoal {

class Device {
 public:
  explicit Device(size_t budget_bytes) : budget_(budget_bytes) {}
  virtual ~Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  virtual std::string name() const = 0;

  // `bytes` of device memory, 64-byte aligned; refused (naming the budget
  // and what is in use) when it would take the device past its budget.
  Status Allocate(size_t bytes, void** out);
  void Free(void* memory, size_t bytes);

  // Queued on the copy stream in order; each returns at once.
  void CopyToDevice(void* device_dst, const void* host_src, size_t bytes);
  void CopyToHost(void* host_dst, const void* device_src, size_t bytes);
  void Zero(void* device_dst, size_t bytes);
  // Host memory that copies will read or write, for the whole life of the
  // device: a GPU page-locks it (its copies then run by DMA, without the
  // host waiting on them); nothing else changes. Copies are right either way.
  virtual void PinHost(void* host, size_t bytes) {}

  // A mark after everything queued so far, and a wait for the queue to pass
  // it; the wait fails, saying what it waited for, after `timeout_ms`.
  virtual uint64_t Mark() = 0;
  virtual Status WaitFor(uint64_t mark, int timeout_ms) = 0;
  // The computation queued from now on starts only once the copies have
  // passed `mark`. A GPU queues that order beside its kernels and the host
  // goes on; where the host computes itself, it waits (WaitFor).
  virtual Status ComputeAfter(uint64_t mark, int timeout_ms) { return WaitFor(mark, timeout_ms); }

  size_t budget() const { return budget_; }
  size_t bytes_in_use() const { return in_use_; }
  size_t peak_bytes() const { return peak_; }
  uint64_t bytes_to_device() const { return to_device_; }
  uint64_t bytes_to_host() const { return to_host_; }

 protected:
  virtual Status DoAllocate(size_t bytes, void** out) = 0;
  virtual void DoFree(void* memory) = 0;
  virtual void DoCopyToDevice(void* dst, const void* src, size_t bytes) = 0;
  virtual void DoCopyToHost(void* dst, const void* src, size_t bytes) = 0;
  virtual void DoZero(void* dst, size_t bytes) = 0;

 private:
  size_t budget_;
  size_t in_use_ = 0;
  size_t peak_ = 0;
  uint64_t to_device_ = 0;
  uint64_t to_host_ = 0;
};

// Rounds up to the 64 bytes every allocation and pool slot is aligned to.
inline size_t DeviceAligned(size_t bytes) { return (bytes + 63) / 64 * 64; }

// "12.34 MiB", as the manager's messages give sizes.
std::string Mib(size_t bytes);

}  // namespace shoal
