#include "device/cuda_device.h"

#if SHOAL_HAVE_CUDA

#include <cuda_runtime_api.h>

#include <chrono>
#include <thread>
#include <vector>

namespace shoal {

namespace {

std::string CudaError(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

class CudaDevice : public Device {
 public:
  CudaDevice(int ordinal, size_t budget, cudaStream_t stream, cudaEvent_t computed)
      : Device(budget), ordinal_(ordinal), stream_(stream), computed_(computed) {}
  ~CudaDevice() override {
    cudaStreamSynchronize(stream_);
    for (void* host : pinned_host_) cudaHostUnregister(host);
    for (auto& [mark, event] : events_) cudaEventDestroy(event);
    cudaEventDestroy(computed_);
    cudaStreamDestroy(stream_);
  }

  std::string name() const override { return "cuda:" + std::to_string(ordinal_); }

  // A range on a page another range already locked is refused by CUDA; it
  // stays pageable (and its error is cleared, so that no later check sees it).
  void PinHost(void* host, size_t bytes) override {
    if (cudaHostRegister(host, bytes, cudaHostRegisterDefault) == cudaSuccess)
      pinned_host_.push_back(host);
    else
      cudaGetLastError();
  }

  // Each mark is an event recorded on the copy stream; a wait polls it so
  // that it can give up at its deadline (cudaEventSynchronize cannot).
  uint64_t Mark() override {
    cudaEvent_t event;
    if (cudaEventCreateWithFlags(&event, cudaEventDisableTiming) != cudaSuccess) {
      cudaStreamSynchronize(stream_);  // no event to wait on later: the mark is reached now
      return ++marks_;
    }
    cudaEventRecord(event, stream_);
    events_.push_back({++marks_, event});
    return marks_;
  }

  // The kernels queued after this wait for the mark's event on the GPU.
  Status ComputeAfter(uint64_t mark, int timeout_ms) override {
    if (queue_error_ != cudaSuccess)
      return Status::Unavailable(name() + ": a copy could not be queued: " + CudaError(queue_error_));
    for (auto& [m, event] : events_)
      if (m == mark) {
        const cudaError_t e = cudaStreamWaitEvent(cudaStreamLegacy, event, 0);
        if (e != cudaSuccess) return Status::Unavailable(name() + ": " + CudaError(e));
      }
    return Status::Ok();  // no event: the mark was reached when it was made
  }

  Status WaitFor(uint64_t mark, int timeout_ms) override {
    if (queue_error_ != cudaSuccess)
      return Status::Unavailable(name() + ": a copy could not be queued: " + CudaError(queue_error_));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!events_.empty() && events_.front().first <= mark) {
      cudaError_t e;
      while ((e = cudaEventQuery(events_.front().second)) == cudaErrorNotReady) {
        if (std::chrono::steady_clock::now() > deadline)
          return Status::Timeout(name() + ": copy mark " + std::to_string(mark) + " not reached after " +
                                 std::to_string(timeout_ms) + " ms");
        std::this_thread::yield();
      }
      if (e != cudaSuccess) return Status::Unavailable(name() + ": copies failed: " + CudaError(e));
      cudaEventDestroy(events_.front().second);
      events_.erase(events_.begin());
    }
    return Status::Ok();
  }

 protected:
  Status DoAllocate(size_t bytes, void** out) override {
    const cudaError_t e = cudaMalloc(out, bytes);
    if (e != cudaSuccess)
      return Status::Unavailable(name() + ": cudaMalloc of " + std::to_string(bytes) +
                                 " bytes: " + CudaError(e));
    return Status::Ok();
  }
  void DoFree(void* memory) override { cudaFree(memory); }
  void DoCopyToDevice(void* dst, const void* src, size_t bytes) override {
    AfterComputeQueued();
    Queued(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
  }
  void DoCopyToHost(void* dst, const void* src, size_t bytes) override {
    AfterComputeQueued();
    Queued(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  }
  void DoZero(void* dst, size_t bytes) override {
    AfterComputeQueued();
    Queued(cudaMemsetAsync(dst, 0, bytes, stream_));
  }

 private:
  // The ops compute on the legacy default stream (lib/ops/cuda_ops.cpp), on
  // the worker's one thread: a copy waits for every kernel queued there
  // before it, so a pass's results go home only once computed, and a pool
  // half is refilled only once the pass before this one is done with it.
  // The next pass's prefetch, queued before this pass's kernels, overlaps
  // them (from and to page-locked homes, PinHost, without the host waiting).
  void AfterComputeQueued() {
    Queued(cudaEventRecord(computed_, cudaStreamLegacy));
    Queued(cudaStreamWaitEvent(stream_, computed_, 0));
  }
  // Copies return nothing: the first that could not be queued fails the next wait.
  void Queued(cudaError_t e) {
    if (e != cudaSuccess && queue_error_ == cudaSuccess) queue_error_ = e;
  }

  int ordinal_;
  cudaStream_t stream_;
  cudaEvent_t computed_;
  uint64_t marks_ = 0;
  std::vector<std::pair<uint64_t, cudaEvent_t>> events_;  // unreached marks, oldest first
  std::vector<void*> pinned_host_;                        // page-locked by PinHost
  cudaError_t queue_error_ = cudaSuccess;
};

}  // namespace

bool BuiltWithCuda() { return true; }

int CudaDeviceCount() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

size_t CudaFreeBytes(int ordinal, size_t* total) {
  size_t free = 0, all = 0;
  if (ordinal < 0 || ordinal >= CudaDeviceCount() || cudaSetDevice(ordinal) != cudaSuccess ||
      cudaMemGetInfo(&free, &all) != cudaSuccess)
    free = all = 0;
  if (total) *total = all;
  return free;
}

Status OpenCudaDevice(int ordinal, size_t budget_bytes, std::unique_ptr<Device>* out) {
  const int count = CudaDeviceCount();
  if (ordinal < 0 || ordinal >= count)
    return Status::InvalidArgument("cuda:" + std::to_string(ordinal) + ": this machine shows " +
                                   std::to_string(count) + " GPUs");
  cudaError_t e = cudaSetDevice(ordinal);
  if (e != cudaSuccess) return Status::Unavailable("cuda:" + std::to_string(ordinal) + ": " + CudaError(e));
  cudaStream_t stream;
  e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (e != cudaSuccess) return Status::Unavailable("cuda:" + std::to_string(ordinal) + ": " + CudaError(e));
  cudaEvent_t computed;
  e = cudaEventCreateWithFlags(&computed, cudaEventDisableTiming);
  if (e != cudaSuccess) {
    cudaStreamDestroy(stream);
    return Status::Unavailable("cuda:" + std::to_string(ordinal) + ": " + CudaError(e));
  }
  *out = std::make_unique<CudaDevice>(ordinal, budget_bytes, stream, computed);
  return Status::Ok();
}

}  // namespace shoal

#else  // no CUDA in this build

namespace shoal {

bool BuiltWithCuda() { return false; }
int CudaDeviceCount() { return 0; }
size_t CudaFreeBytes(int, size_t* total) {
  if (total) *total = 0;
  return 0;
}

Status OpenCudaDevice(int ordinal, size_t, std::unique_ptr<Device>*) {
  return Status::InvalidArgument(
      "cuda:" + std::to_string(ordinal) +
      ": this shoal was built without CUDA (configure with -DSHOAL_CUDA=ON where the CUDA "
      "toolkit is installed)");
}

}  // namespace shoal

#endif
