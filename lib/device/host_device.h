// A device whose memory is host memory under a budget, its copies done by a
// thread of its own in the order they were queued: GeePS's memory manager
// runs on it exactly as on a GPU (placement, swapping, prefetching in the
// background), so all of it but the CUDA calls is tested on a CPU machine.
#pragma once

#include <deque>
#include <thread>

#include "core/mutex.h"
#include "device/device.h"

namespace shoal {

class HostDevice : public Device {
 public:
  explicit HostDevice(size_t budget_bytes);
  ~HostDevice() override;

  std::string name() const override { return "host device"; }
  uint64_t Mark() override;
  Status WaitFor(uint64_t mark, int timeout_ms) override;

 protected:
  Status DoAllocate(size_t bytes, void** out) override;
  void DoFree(void* memory) override;
  void DoCopyToDevice(void* dst, const void* src, size_t bytes) override { Queue(dst, src, bytes); }
  void DoCopyToHost(void* dst, const void* src, size_t bytes) override { Queue(dst, src, bytes); }
  void DoZero(void* dst, size_t bytes) override { Queue(dst, nullptr, bytes); }

 private:
  struct Copy {
    void* dst;
    const void* src;  // null: zero dst
    size_t bytes;
  };
  void Queue(void* dst, const void* src, size_t bytes);
  void Run();

  Mutex mu_;
  CondVar queued_{&mu_}, done_{&mu_};
  std::deque<Copy> queue_ GUARDED_BY(mu_);
  uint64_t enqueued_ GUARDED_BY(mu_) = 0;   // copies queued so far
  uint64_t completed_ GUARDED_BY(mu_) = 0;  // copies done so far (in queue order)
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace shoal
