// The ops' second home: a GPU. While a GpuOps is current on a thread (the
// training passes of a worker with train.device: cuda, whose tensors the
// memory manager has bound to GPU memory), each op below runs there on the
// device pointers it is given, instead of on the host. Layers call the same
// op functions either way (lib/ops/*.h); only the op decides where it runs.
// The CUDA implementation (cuda_ops.cpp: cuBLAS, cuDNN and kernels of ours)
// is a module of its own, libshoal_cuda.so, loaded by LoadCudaOps: only a
// worker that trains on a GPU maps cuBLAS and cuDNN.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/status.h"
#include "device/device.h"
#include "ops/batch_norm.h"
#include "ops/convolution.h"
#include "ops/grad_write.h"
#include "ops/lrn.h"
#include "ops/pooling.h"

namespace shoal {

// Raised whenever GpuOps changes: LoadCudaOps refuses a module built for another.
inline constexpr int kGpuOpsVersion = 3;

class GpuOps {
 public:
  virtual ~GpuOps() = default;
  // "cuda:0 (NVIDIA H200, cuDNN 9.x)"
  virtual const char* name() const = 0;
  // The first failure of an op since the last call (ops return nothing:
  // they keep it), then Ok again. Every pass checks it.
  virtual Status TakeStatus() = 0;
  // The device whose memory, under its budget beside the step's data, the
  // ops take their working memory from (cuDNN's workspace); set before the
  // first op, and outliving the ops.
  virtual void TakeWorkspaceFrom(Device* device) = 0;

  // As the host ops of the same names (fully_connected.h, convolution.h,
  // pooling.h, batch_norm.h, lrn.h, elementwise.h, softmax_loss.h); every
  // pointer is device memory except the labels, which are the host's. A
  // convolution's bias and its gradient may be null: none.
  virtual void FullyConnectedForward(int batch, int in, int out, const float* x, const float* w,
                                     const float* b, float* y) = 0;
  virtual void FullyConnectedBackward(int batch, int in, int out, const float* x, const float* w,
                                      const float* dy, float* dx, float* dw, float* db,
                                      GradWrite dx_write) = 0;
  virtual void ConvolutionForward(const ConvGeometry& g, int batch, const float* x, const float* w,
                                  const float* b, float* y) = 0;
  virtual void ConvolutionBackward(const ConvGeometry& g, int batch, const float* x, const float* w,
                                   const float* dy, float* dx, float* dw, float* db, GradWrite dx_write) = 0;
  virtual void PoolForward(const PoolGeometry& g, int batch, const float* x, float* y) = 0;
  virtual void PoolBackward(const PoolGeometry& g, int batch, const float* x, const float* y, const float* dy,
                            float* dx, GradWrite write) = 0;
  // Batch norm without a group (a synchronised one runs on the host). The
  // batch's statistics stay in device memory that the ops keep from the
  // training pass to the backward pass and RunningChanges, under the key
  // `stats` (the address of the host's vectors, which a GPU leaves unwritten).
  virtual void BatchNormTrainForward(const BatchNormGeometry& g, int batch, const float* x,
                                     const float* gamma, const float* beta, float* y, const void* stats) = 0;
  virtual void BatchNormInferenceForward(const BatchNormGeometry& g, int batch, const float* x,
                                         const float* gamma, const float* beta, const float* running_mean,
                                         const float* running_var, float* y) = 0;
  virtual void BatchNormBackward(const BatchNormGeometry& g, int batch, const float* x, const float* dy,
                                 const float* gamma, const void* stats, float* dx, float* dgamma,
                                 float* dbeta, GradWrite write) = 0;
  virtual void BatchNormRunningChanges(const BatchNormGeometry& g, float momentum, const float* running_mean,
                                       const float* running_var, const void* stats, float* mean_change,
                                       float* var_change) = 0;
  // Only where LrnHasGpuForm(g) (lrn.h).
  virtual void LrnForward(const LrnGeometry& g, int batch, const float* x, float* y) = 0;
  virtual void LrnBackward(const LrnGeometry& g, int batch, const float* x, const float* y, const float* dy,
                           float* dx, GradWrite write) = 0;
  virtual void ReluForward(size_t n, const float* x, float* y) = 0;
  virtual void ReluBackward(size_t n, const float* y, const float* dy, float* dx, GradWrite write) = 0;
  virtual void SigmoidForward(size_t n, const float* x, float* y) = 0;
  virtual void SigmoidBackward(size_t n, const float* y, const float* dy, float* dx, GradWrite write) = 0;
  virtual void IdentityForward(size_t n, const float* x, float* y) = 0;
  virtual void IdentityBackward(size_t n, const float* dy, float* dx, GradWrite write) = 0;
  virtual void CopyRows(int rows, size_t cols, const float* x, size_t x_stride, float* y, size_t y_stride,
                        GradWrite write) = 0;
  virtual void DropoutForward(size_t n, float ratio, uint64_t key, const float* x, float* y) = 0;
  virtual void DropoutBackward(size_t n, float ratio, uint64_t key, const float* dy, float* dx,
                               GradWrite write) = 0;
  virtual float SoftmaxCrossEntropyForward(int batch, int classes, const float* logits, const int32_t* labels,
                                           float* prob, int* correct) = 0;
  virtual void SoftmaxCrossEntropyBackward(int batch, int classes, const float* prob, const int32_t* labels,
                                           float* dlogits) = 0;
};

// The GpuOps current on this thread, or null: the host computes.
GpuOps* CurrentGpuOps();

// Makes `ops` current on this thread for the scope (null: the host).
class ScopedGpuOps {
 public:
  explicit ScopedGpuOps(GpuOps* ops);
  ~ScopedGpuOps();
  ScopedGpuOps(const ScopedGpuOps&) = delete;
  ScopedGpuOps& operator=(const ScopedGpuOps&) = delete;

 private:
  GpuOps* previous_;
};

// The ops of GPU `ordinal`, from libshoal_cuda.so beside the running
// program; fails, saying why, where that module was not built (no CUDA
// toolkit), cannot be loaded (no cuBLAS or cuDNN) or sees no such GPU.
Status LoadCudaOps(int ordinal, std::unique_ptr<GpuOps>* out);

}  // namespace shoal
