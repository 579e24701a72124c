#include "device/host_device.h"

#include <chrono>
#include <cstdlib>
#include <cstring>

namespace shoal {

HostDevice::HostDevice(size_t budget_bytes) : Device(budget_bytes), thread_([this] { Run(); }) {}

HostDevice::~HostDevice() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  queued_.notify_all();
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
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back({dst, src, bytes});
    ++enqueued_;
  }
  queued_.notify_one();
}

uint64_t HostDevice::Mark() {
  std::lock_guard<std::mutex> lock(mu_);
  return enqueued_;
}

Status HostDevice::WaitFor(uint64_t mark, int timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  if (done_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return completed_ >= mark; }))
    return Status::Ok();
  return Status::Timeout(name() + ": copy " + std::to_string(mark) + " not done after " +
                         std::to_string(timeout_ms) + " ms (" + std::to_string(completed_) + " of " +
                         std::to_string(enqueued_) + " done)");
}

void HostDevice::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    queued_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    const Copy c = queue_.front();
    queue_.pop_front();
    lock.unlock();
    if (c.src)
      std::memcpy(c.dst, c.src, c.bytes);
    else
      std::memset(c.dst, 0, c.bytes);
    lock.lock();
    ++completed_;
    done_.notify_all();
  }
}

}  // namespace shoal
