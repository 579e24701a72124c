#include "device/host_device.h"

#include <chrono>
#include <cstdlib>
#include <cstring>

namespace shoal {

HostDevice::HostDevice(size_t budget_bytes) : Device(budget_bytes), thread_([this] { Run(); }) {}

HostDevice::~HostDevice() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  queued_.SignalAll();
  thread_.join();
}

Status HostDevice::DoAllocate(size_t bytes, void** out) {
  *out = std::aligned_alloc(64, bytes);
  if (!*out)
    return Status::Unavailable(name() + ": the host has no " + std::to_string(bytes) + " bytes to give");
  return Status::Ok();
}

void HostDevice::DoFree(void* memory) { std::free(memory); }

void HostDevice::Queue(void* dst, const void* src, size_t bytes) {
  {
    MutexLock lock(&mu_);
    queue_.push_back({dst, src, bytes});
    ++enqueued_;
  }
  queued_.Signal();
}

uint64_t HostDevice::Mark() {
  MutexLock lock(&mu_);
  return enqueued_;
}

Status HostDevice::WaitFor(uint64_t mark, int timeout_ms) {
  MutexLock lock(&mu_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (completed_ < mark)
    if (!done_.WaitUntil(deadline) && completed_ < mark) break;
  if (completed_ >= mark) return Status::Ok();
  return Status::Timeout(name() + ": copy " + std::to_string(mark) + " not done after " +
                         std::to_string(timeout_ms) + " ms (" + std::to_string(completed_) + " of " +
                         std::to_string(enqueued_) + " done)");
}

void HostDevice::Run() {
  MutexLock lock(&mu_);
  for (;;) {
    while (!stop_ && queue_.empty()) queued_.Wait();
    if (queue_.empty()) return;  // stopping, nothing left
    const Copy c = queue_.front();
    queue_.pop_front();
    mu_.Unlock();
    if (c.src)
      std::memcpy(c.dst, c.src, c.bytes);
    else
      std::memset(c.dst, 0, c.bytes);
    mu_.Lock();
    ++completed_;
    done_.SignalAll();
  }
}

}  // namespace shoal
