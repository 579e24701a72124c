// GpuOps on CUDA (gpu_ops.h): fully connected on cuBLAS; convolution,
// pooling, batch norm and LRN on cuDNN; the element-wise ops, the softmax
// loss and the pooling windows cuDNN has no form for on kernels of ours
// (cuda_kernels.cu). Everything runs on the legacy default stream,
// in the order the passes call it; the memory manager's copies run on a
// stream of their own and wait for what was queued here before them
// (device/cuda_device.cpp). Built as libshoal_cuda.so (CMakeLists.txt).
//
// Results follow the host's to rounding: cuBLAS's default math and cuDNN's
// FMA math (no TF32), deterministic cuDNN algorithms only, chosen once per
// shape by cuDNN's heuristics and kept.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "ops/cuda_kernels.h"
#include "ops/gpu_ops.h"

namespace shoal {
namespace {

// A device buffer that grows to the largest size asked of it (what it held
// is dropped when it grows); null, with `*error` set, when cudaMalloc fails.
template <typename T>
class Scratch {
 public:
  ~Scratch() { cudaFree(data_); }
  T* Get(size_t n, cudaError_t* error) {
    if (n <= size_) return data_;
    cudaFree(data_);
    data_ = nullptr;
    size_ = 0;
    *error = cudaMalloc(reinterpret_cast<void**>(&data_), n * sizeof(T));
    if (*error == cudaSuccess)
      size_ = n;
    else
      data_ = nullptr;
    return data_;
  }
  T* data() const { return data_; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

struct ConvPlan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t forward{};
  cudnnConvolutionBwdDataAlgo_t backward_data{};
  cudnnConvolutionBwdFilterAlgo_t backward_filter{};
  size_t workspace = 0;  // the most any of the three needs
};

struct PoolPlan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnPoolingDescriptor_t pool = nullptr;
};

// Batch norm's and LRN's: x and y as [N, C, P, 1], batch norm's per-channel
// tensors as [1, C, 1, 1], and LRN's window.
struct NormPlan {
  cudnnTensorDescriptor_t x = nullptr, channels = nullptr;
  cudnnLRNDescriptor_t lrn = nullptr;
};

// A convolution's workspace stays within this, and within what the
// device's budget leaves beside the step's data.
constexpr size_t kMaxWorkspaceBytes = size_t{256} << 20;

// The first of cuDNN's heuristic choices that is deterministic (a BSP run
// gives the same bits every time), runs in FMA math (no TF32: the host's
// results to rounding) and needs at most `workspace` bytes.
template <typename Perf>
bool ChooseAlgo(const Perf* perf, int count, size_t workspace, decltype(Perf::algo)* algo) {
  for (int i = 0; i < count; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].determinism == CUDNN_DETERMINISTIC &&
        perf[i].mathType == CUDNN_FMA_MATH && perf[i].memory <= workspace) {
      *algo = perf[i].algo;
      return true;
    }
  return false;
}

void Destroy(ConvPlan& p) {
  cudnnDestroyTensorDescriptor(p.x), cudnnDestroyTensorDescriptor(p.y), cudnnDestroyTensorDescriptor(p.bias);
  cudnnDestroyFilterDescriptor(p.w), cudnnDestroyConvolutionDescriptor(p.conv);
}

void Destroy(PoolPlan& p) {
  cudnnDestroyTensorDescriptor(p.x), cudnnDestroyTensorDescriptor(p.y), cudnnDestroyPoolingDescriptor(p.pool);
}

void Destroy(NormPlan& p) {
  cudnnDestroyTensorDescriptor(p.x), cudnnDestroyTensorDescriptor(p.channels),
      cudnnDestroyLRNDescriptor(p.lrn);
}

cuda::PoolShape Shape(const PoolGeometry& g, int batch) {
  return {batch * g.channels, g.height,   g.width,  g.out_height(), g.out_width(),
          g.kernel_h,         g.kernel_w, g.stride, g.pad,          g.kind == PoolKind::kAvg};
}

class CudaOps : public GpuOps {
 public:
  CudaOps(int ordinal, cublasHandle_t blas, cudnnHandle_t dnn) : blas_(blas), dnn_(dnn) {
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, ordinal);
    const size_t v = cudnnGetVersion();
    name_ = "cuda:" + std::to_string(ordinal) + " (" + prop.name + ", cuDNN " + std::to_string(v / 10000) +
            "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100) + ")";
  }
  ~CudaOps() override {
    cudaDeviceSynchronize();
    if (workspace_) device_->Free(workspace_, workspace_bytes_);
    for (auto& [key, p] : conv_plans_) Destroy(p);
    for (auto& [key, p] : pool_plans_) Destroy(p);
    for (auto& [key, p] : norm_plans_) Destroy(p);
    cudnnDestroy(dnn_);
    cublasDestroy(blas_);
  }

  const char* name() const override { return name_.c_str(); }
  void TakeWorkspaceFrom(Device* device) override { device_ = device; }

  Status TakeStatus() override {
    // A kernel's failure shows at the next call that waits on the stream.
    if (status_.ok()) Check(cudaGetLastError(), "a kernel");
    Status s = std::move(status_);
    status_ = Status::Ok();
    return s;
  }

  // Row-major products as cuBLAS's column-major ones: a row-major [r, c]
  // matrix is a column-major [c, r] one, so y = x·Wᵀ is yᶜ = Wᶜᵀ·xᶜ.
  void FullyConnectedForward(int batch, int in, int out, const float* x, const float* w, const float* b,
                             float* y) override {
    const float one = 1.0f, zero = 0.0f;
    Check(cublasSgemm(blas_, CUBLAS_OP_T, CUBLAS_OP_N, out, batch, in, &one, w, in, x, in, &zero, y, out),
          "fully connected forward");
    cuda::AddBiasRows(batch, out, b, y);
  }

  void FullyConnectedBackward(int batch, int in, int out, const float* x, const float* w, const float* dy,
                              float* dx, float* dw, float* db, GradWrite dx_write) override {
    const float one = 1.0f, zero = 0.0f;
    // dW[out, in] = dyᵀ·x; db = dyᵀ·1; dx[batch, in] = dy·W.
    Check(cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_T, in, out, batch, &one, x, in, dy, out, &zero, dw, in),
          "fully connected weight gradient");
    if (const float* ones = Ones(batch))
      Check(cublasSgemv(blas_, CUBLAS_OP_N, out, batch, &one, dy, out, ones, 1, &zero, db, 1),
            "fully connected bias gradient");
    if (dx) {
      const float beta = dx_write == GradWrite::kAdd ? 1.0f : 0.0f;
      Check(cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_N, in, batch, out, &one, w, in, dy, out, &beta, dx, in),
            "fully connected input gradient");
    }
  }

  void ConvolutionForward(const ConvGeometry& g, int batch, const float* x, const float* w, const float* b,
                          float* y) override {
    const ConvPlan* p = Plan(g, batch);
    void* workspace = Workspace(p);
    if (!p || (p->workspace && !workspace)) return;
    const float one = 1.0f, zero = 0.0f;
    Check(cudnnConvolutionForward(dnn_, &one, p->x, x, p->w, w, p->conv, p->forward, workspace, p->workspace,
                                  &zero, p->y, y),
          "convolution forward");
    if (b) Check(cudnnAddTensor(dnn_, &one, p->bias, b, &one, p->y, y), "convolution bias");
  }

  void ConvolutionBackward(const ConvGeometry& g, int batch, const float* x, const float* w, const float* dy,
                           float* dx, float* dw, float* db, GradWrite dx_write) override {
    const ConvPlan* p = Plan(g, batch);
    void* workspace = Workspace(p);
    if (!p || (p->workspace && !workspace)) return;
    const float one = 1.0f, zero = 0.0f, beta = dx_write == GradWrite::kAdd ? 1.0f : 0.0f;
    if (db)
      Check(cudnnConvolutionBackwardBias(dnn_, &one, p->y, dy, &zero, p->bias, db),
            "convolution bias gradient");
    Check(cudnnConvolutionBackwardFilter(dnn_, &one, p->x, x, p->y, dy, p->conv, p->backward_filter,
                                         workspace, p->workspace, &zero, p->w, dw),
          "convolution weight gradient");
    if (dx)
      Check(cudnnConvolutionBackwardData(dnn_, &one, p->w, w, p->y, dy, p->conv, p->backward_data, workspace,
                                         p->workspace, &beta, p->x, dx),
            "convolution input gradient");
  }

  void PoolForward(const PoolGeometry& g, int batch, const float* x, float* y) override {
    if (g.Overhangs()) return cuda::Pool(Shape(g, batch), x, y);
    const PoolPlan* p = Plan(g, batch);
    if (!p) return;
    const float one = 1.0f, zero = 0.0f;
    Check(cudnnPoolingForward(dnn_, p->pool, &one, p->x, x, &zero, p->y, y), "pooling forward");
  }

  void PoolBackward(const PoolGeometry& g, int batch, const float* x, const float* y, const float* dy,
                    float* dx, GradWrite write) override {
    if (g.Overhangs()) return cuda::PoolGrad(Shape(g, batch), x, dy, dx, write == GradWrite::kAdd);
    const PoolPlan* p = Plan(g, batch);
    if (!p) return;
    const float one = 1.0f, beta = write == GradWrite::kAdd ? 1.0f : 0.0f;
    Check(cudnnPoolingBackward(dnn_, p->pool, &one, p->y, y, p->y, dy, p->x, x, &beta, p->x, dx),
          "pooling backward");
  }

  // Spatial batch norm over [N, C, P, 1]: per channel, as the host's.
  void BatchNormTrainForward(const BatchNormGeometry& g, int batch, const float* x, const float* gamma,
                             const float* beta, float* y, const void* stats) override {
    if (static_cast<double>(batch) * g.plane < 2) {
      Fail("batch norm over one value a channel has no unbiased variance (a batch of " +
           std::to_string(batch) + ")");
      return;
    }
    const NormPlan* p = Plan(g, batch);
    float* s = Stats(stats, g.channels);
    if (!p || !s) return;
    const int c = g.channels;
    // cuDNN blends its running averages with what they held: zeros, not garbage.
    if (!Check(cudaMemsetAsync(s + 2 * c, 0, 2 * c * sizeof(float), nullptr), "batch norm statistics"))
      return;
    const float one = 1.0f, zero = 0.0f;
    Check(cudnnBatchNormalizationForwardTraining(dnn_, CUDNN_BATCHNORM_SPATIAL, &one, &zero, p->x, x, p->x, y,
                                                 p->channels, gamma, beta, 1.0, s + 3 * c, s + 2 * c, g.eps,
                                                 s, s + c),
          "batch norm forward");
  }

  void BatchNormInferenceForward(const BatchNormGeometry& g, int batch, const float* x, const float* gamma,
                                 const float* beta, const float* running_mean, const float* running_var,
                                 float* y) override {
    const NormPlan* p = Plan(g, batch);
    if (!p) return;
    const float one = 1.0f, zero = 0.0f;
    Check(
        cudnnBatchNormalizationForwardInference(dnn_, CUDNN_BATCHNORM_SPATIAL, &one, &zero, p->x, x, p->x, y,
                                                p->channels, gamma, beta, running_mean, running_var, g.eps),
        "batch norm inference");
  }

  void BatchNormBackward(const BatchNormGeometry& g, int batch, const float* x, const float* dy,
                         const float* gamma, const void* stats, float* dx, float* dgamma, float* dbeta,
                         GradWrite write) override {
    const NormPlan* p = Plan(g, batch);
    const float* s = KeptStats(stats);
    if (!p || !s) return;
    // cuDNN computes dx whether wanted or not.
    if (!dx) {
      cudaError_t e = cudaSuccess;
      dx = unwanted_dx_.Get(static_cast<size_t>(batch) * g.channels * g.plane, &e);
      if (!Check(e, "batch norm scratch")) return;
      write = GradWrite::kSet;
    }
    const float one = 1.0f, zero = 0.0f, beta = write == GradWrite::kAdd ? 1.0f : 0.0f;
    Check(cudnnBatchNormalizationBackward(dnn_, CUDNN_BATCHNORM_SPATIAL, &one, &beta, &one, &zero, p->x, x,
                                          p->x, dy, p->x, dx, p->channels, gamma, dgamma, dbeta, g.eps, s,
                                          s + g.channels),
          "batch norm backward");
  }

  void BatchNormRunningChanges(const BatchNormGeometry& g, float momentum, const float* running_mean,
                               const float* running_var, const void* stats, float* mean_change,
                               float* var_change) override {
    const float* s = KeptStats(stats);
    if (!s) return;
    cuda::RunningChange(g.channels, momentum, running_mean, s, mean_change);
    cuda::RunningChange(g.channels, momentum, running_var, s + 2 * g.channels, var_change);
  }

  void LrnForward(const LrnGeometry& g, int batch, const float* x, float* y) override {
    const NormPlan* p = Plan(g, batch);
    if (!p) return;
    const float one = 1.0f, zero = 0.0f;
    Check(cudnnLRNCrossChannelForward(dnn_, p->lrn, CUDNN_LRN_CROSS_CHANNEL_DIM1, &one, p->x, x, &zero, p->x,
                                      y),
          "LRN forward");
  }

  void LrnBackward(const LrnGeometry& g, int batch, const float* x, const float* y, const float* dy,
                   float* dx, GradWrite write) override {
    const NormPlan* p = Plan(g, batch);
    if (!p) return;
    const float one = 1.0f, beta = write == GradWrite::kAdd ? 1.0f : 0.0f;
    Check(cudnnLRNCrossChannelBackward(dnn_, p->lrn, CUDNN_LRN_CROSS_CHANNEL_DIM1, &one, p->x, y, p->x, dy,
                                       p->x, x, &beta, p->x, dx),
          "LRN backward");
  }

  void ReluForward(size_t n, const float* x, float* y) override { cuda::Relu(n, x, y); }
  void ReluBackward(size_t n, const float* y, const float* dy, float* dx, GradWrite write) override {
    cuda::ReluGrad(n, y, dy, dx, write == GradWrite::kAdd);
  }
  void SigmoidForward(size_t n, const float* x, float* y) override { cuda::Sigmoid(n, x, y); }
  void SigmoidBackward(size_t n, const float* y, const float* dy, float* dx, GradWrite write) override {
    cuda::SigmoidGrad(n, y, dy, dx, write == GradWrite::kAdd);
  }
  void IdentityForward(size_t n, const float* x, float* y) override {
    Check(cudaMemcpyAsync(y, x, n * sizeof(float), cudaMemcpyDeviceToDevice, nullptr), "copy");
  }
  void IdentityBackward(size_t n, const float* dy, float* dx, GradWrite write) override {
    if (write == GradWrite::kAdd)
      cuda::AddInto(n, dy, dx);
    else
      IdentityForward(n, dy, dx);
  }

  void CopyRows(int rows, size_t cols, const float* x, size_t x_stride, float* y, size_t y_stride,
                GradWrite write) override {
    if (write == GradWrite::kAdd) return cuda::AddRows(rows, cols, x, x_stride, y, y_stride);
    if (rows > 0 && cols > 0)
      Check(cudaMemcpy2DAsync(y, y_stride * sizeof(float), x, x_stride * sizeof(float), cols * sizeof(float),
                              rows, cudaMemcpyDeviceToDevice, nullptr),
            "copy of rows");
  }

  void DropoutForward(size_t n, float ratio, uint64_t key, const float* x, float* y) override {
    cuda::Dropout(n, ratio, 1.0f / (1.0f - ratio), key, x, y, false);
  }
  void DropoutBackward(size_t n, float ratio, uint64_t key, const float* dy, float* dx,
                       GradWrite write) override {
    cuda::Dropout(n, ratio, 1.0f / (1.0f - ratio), key, dy, dx, write == GradWrite::kAdd);
  }

  float SoftmaxCrossEntropyForward(int batch, int classes, const float* logits, const int32_t* labels,
                                   float* prob, int* correct) override {
    labels_from_ = nullptr;  // a new batch's: copied afresh
    const int32_t* device_labels = Labels(batch, labels);
    cudaError_t loss_error = cudaSuccess, hit_error = cudaSuccess;
    double* row_loss = row_loss_.Get(batch, &loss_error);
    int32_t* row_hit = row_hit_.Get(batch, &hit_error);
    if (!device_labels || !Check(loss_error, "softmax loss scratch") ||
        !Check(hit_error, "softmax loss scratch"))
      return 0.0f;
    cuda::SoftmaxCrossEntropy(batch, classes, logits, device_labels, prob, row_loss, row_hit);
    // The loss and the hits come back to the host now: the worker reads them after the pass.
    std::vector<double> loss(batch);
    std::vector<int32_t> hit(batch);
    if (!Check(cudaMemcpy(loss.data(), row_loss, batch * sizeof(double), cudaMemcpyDeviceToHost),
               "softmax loss") ||
        !Check(cudaMemcpy(hit.data(), row_hit, batch * sizeof(int32_t), cudaMemcpyDeviceToHost),
               "softmax loss"))
      return 0.0f;
    double sum = 0.0;
    int hits = 0;
    for (int r = 0; r < batch; ++r) sum += loss[r], hits += hit[r];
    if (correct) *correct = hits;
    return static_cast<float>(sum / batch);
  }

  void SoftmaxCrossEntropyBackward(int batch, int classes, const float* prob, const int32_t* labels,
                                   float* dlogits) override {
    if (const int32_t* device_labels = Labels(batch, labels))
      cuda::SoftmaxCrossEntropyGrad(batch, classes, prob, device_labels, dlogits);
  }

 private:
  template <typename E>
  bool Check(E e, const char* what);

  // The host's labels in device memory (copied in order on the stream): the
  // forward pass copies them, the backward pass of the same batch reuses them.
  const int32_t* Labels(int batch, const int32_t* host) {
    if (host == labels_from_ && batch == labels_batch_) return labels_at_;
    labels_from_ = nullptr;
    cudaError_t e = cudaSuccess;
    int32_t* d = labels_.Get(batch, &e);
    if (!Check(e, "labels") ||
        !Check(cudaMemcpy(d, host, batch * sizeof(int32_t), cudaMemcpyHostToDevice), "labels"))
      return nullptr;
    labels_from_ = host, labels_batch_ = batch, labels_at_ = d;
    return d;
  }

  // `n` ones, for the bias gradient's sum over rows.
  const float* Ones(int n) {
    if (n <= ones_count_) return ones_at_;
    ones_count_ = 0;
    cudaError_t e = cudaSuccess;
    float* d = ones_.Get(n, &e);
    const std::vector<float> host(n, 1.0f);
    if (!Check(e, "ones") ||
        !Check(cudaMemcpy(d, host.data(), n * sizeof(float), cudaMemcpyHostToDevice), "ones"))
      return nullptr;
    ones_at_ = d;
    ones_count_ = n;
    return d;
  }

  // What the device's budget leaves for the workspace: its room beside
  // everything else it holds, with what the workspace holds now.
  size_t WorkspaceRoom() const {
    if (!device_) return 0;
    const size_t others = device_->bytes_in_use() - DeviceAligned(workspace_bytes_);
    const size_t room = device_->budget() > others ? device_->budget() - others : 0;
    return std::min(kMaxWorkspaceBytes, room / 64 * 64);  // the device charges in 64-byte units
  }

  // The workspace, grown from the device to `p`'s (null where p needs none).
  void* Workspace(const ConvPlan* p) {
    if (!p || p->workspace == 0) return nullptr;
    if (p->workspace <= workspace_bytes_) return workspace_;
    if (!device_) {
      Fail("no device to take the convolution workspace from (TakeWorkspaceFrom)");
      return nullptr;
    }
    if (workspace_) device_->Free(workspace_, workspace_bytes_);  // cudaFree waits for the kernels using it
    workspace_ = nullptr;
    workspace_bytes_ = 0;
    const Status s = device_->Allocate(p->workspace, &workspace_);
    if (!s.ok()) {
      Fail("the convolution workspace: " + s.message());
      workspace_ = nullptr;
      return nullptr;
    }
    workspace_bytes_ = p->workspace;
    return workspace_;
  }

  const ConvPlan* Plan(const ConvGeometry& g, int batch) {
    const auto key =
        std::make_tuple(g.channels, g.height, g.width, g.filters, g.kernel, g.stride, g.pad, batch);
    if (auto it = conv_plans_.find(key); it != conv_plans_.end()) return &it->second;
    ConvPlan p;
    const char* what = "convolution descriptors";
    if (!Check(cudnnCreateTensorDescriptor(&p.x), what) || !Check(cudnnCreateTensorDescriptor(&p.y), what) ||
        !Check(cudnnCreateTensorDescriptor(&p.bias), what) ||
        !Check(cudnnCreateFilterDescriptor(&p.w), what) ||
        !Check(cudnnCreateConvolutionDescriptor(&p.conv), what))
      return Discard(p);
    const int oh = g.out_height(), ow = g.out_width();
    if (!Check(cudnnSetTensor4dDescriptor(p.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, batch, g.channels,
                                          g.height, g.width),
               what) ||
        !Check(cudnnSetTensor4dDescriptor(p.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, batch, g.filters, oh, ow),
               what) ||
        !Check(cudnnSetTensor4dDescriptor(p.bias, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, g.filters, 1, 1),
               what) ||
        !Check(cudnnSetFilter4dDescriptor(p.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, g.filters, g.channels,
                                          g.kernel, g.kernel),
               what) ||
        !Check(cudnnSetConvolution2dDescriptor(p.conv, g.pad, g.pad, g.stride, g.stride, 1, 1,
                                               CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
               what) ||
        !Check(cudnnSetConvolutionMathType(p.conv, CUDNN_FMA_MATH), what))
      return Discard(p);
    constexpr int kChoices = 16;
    int count = 0;
    cudnnConvolutionFwdAlgoPerf_t fwd[kChoices];
    cudnnConvolutionBwdDataAlgoPerf_t bwd_data[kChoices];
    cudnnConvolutionBwdFilterAlgoPerf_t bwd_filter[kChoices];
    what = "convolution algorithms";
    const size_t room = WorkspaceRoom();
    if (!Check(cudnnGetConvolutionForwardAlgorithm_v7(dnn_, p.x, p.w, p.conv, p.y, kChoices, &count, fwd),
               what) ||
        !ChooseAlgo(fwd, count, room, &p.forward) ||
        !Check(cudnnGetConvolutionBackwardDataAlgorithm_v7(dnn_, p.w, p.y, p.conv, p.x, kChoices, &count,
                                                           bwd_data),
               what) ||
        !ChooseAlgo(bwd_data, count, room, &p.backward_data) ||
        !Check(cudnnGetConvolutionBackwardFilterAlgorithm_v7(dnn_, p.x, p.y, p.conv, p.w, kChoices, &count,
                                                             bwd_filter),
               what) ||
        !ChooseAlgo(bwd_filter, count, room, &p.backward_filter)) {
      Fail("cuDNN has no deterministic algorithm in FMA math for the convolution of " +
           std::to_string(g.channels) + "x" + std::to_string(g.height) + "x" + std::to_string(g.width) +
           " by " + std::to_string(g.filters) + " filters within the " + std::to_string(room) +
           " bytes of workspace the device's budget leaves" +
           (room < kMaxWorkspaceBytes ? " (raise train.device_memory_mb)" : ""));
      return Discard(p);
    }
    size_t a = 0, b = 0, c = 0;
    if (!Check(cudnnGetConvolutionForwardWorkspaceSize(dnn_, p.x, p.w, p.conv, p.y, p.forward, &a), what) ||
        !Check(cudnnGetConvolutionBackwardDataWorkspaceSize(dnn_, p.w, p.y, p.conv, p.x, p.backward_data, &b),
               what) ||
        !Check(cudnnGetConvolutionBackwardFilterWorkspaceSize(dnn_, p.x, p.y, p.conv, p.w, p.backward_filter,
                                                              &c),
               what))
      return Discard(p);
    p.workspace = std::max({a, b, c});
    if (p.workspace > room) {
      Fail("cuDNN asks " + std::to_string(p.workspace) +
           " bytes of workspace for the algorithms it chose within " + std::to_string(room));
      return Discard(p);
    }
    return &conv_plans_.emplace(key, p).first->second;
  }

  // Where no window runs past the padded input (Overhangs: cuda::Pool's).
  const PoolPlan* Plan(const PoolGeometry& g, int batch) {
    const auto key = std::make_tuple(g.channels, g.height, g.width, g.kernel_h, g.kernel_w, g.stride, g.pad,
                                     static_cast<int>(g.kind), batch);
    if (auto it = pool_plans_.find(key); it != pool_plans_.end()) return &it->second;
    PoolPlan p;
    const char* what = "pooling descriptors";
    if (!Check(cudnnCreateTensorDescriptor(&p.x), what) || !Check(cudnnCreateTensorDescriptor(&p.y), what) ||
        !Check(cudnnCreatePoolingDescriptor(&p.pool), what) ||
        !Check(cudnnSetTensor4dDescriptor(p.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, batch, g.channels,
                                          g.height, g.width),
               what) ||
        !Check(cudnnSetTensor4dDescriptor(p.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, batch, g.channels,
                                          g.out_height(), g.out_width()),
               what) ||
        !Check(cudnnSetPooling2dDescriptor(
                   p.pool,
                   g.kind == PoolKind::kMax ? CUDNN_POOLING_MAX_DETERMINISTIC
                                            : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
                   CUDNN_NOT_PROPAGATE_NAN, g.kernel_h, g.kernel_w, g.pad, g.pad, g.stride, g.stride),
               what))
      return Discard(p);
    return &pool_plans_.emplace(key, p).first->second;
  }

  // Batch norm's (lrn null) or LRN's descriptors, for `channels` channels of
  // `plane` values, `batch` records.
  const NormPlan* NormPlanFor(int channels, int plane, int batch, const LrnGeometry* lrn) {
    const auto key = std::make_tuple(channels, plane, batch, lrn ? lrn->size : 0, lrn ? lrn->alpha : 0.0f,
                                     lrn ? lrn->beta : 0.0f, lrn ? lrn->k : 0.0f);
    if (auto it = norm_plans_.find(key); it != norm_plans_.end()) return &it->second;
    NormPlan p;
    const char* what = lrn ? "LRN descriptors" : "batch norm descriptors";
    if (!Check(cudnnCreateTensorDescriptor(&p.x), what) ||
        !Check(
            cudnnSetTensor4dDescriptor(p.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, batch, channels, plane, 1),
            what))
      return Discard(p);
    if (lrn) {
      if (!LrnHasGpuForm(*lrn)) {
        Fail("cuDNN has no LRN of size " + std::to_string(lrn->size) + ", k " + std::to_string(lrn->k) +
             " and beta " + std::to_string(lrn->beta));
        return Discard(p);
      }
      if (!Check(cudnnCreateLRNDescriptor(&p.lrn), what) ||
          !Check(cudnnSetLRNDescriptor(p.lrn, lrn->size, lrn->alpha, lrn->beta, lrn->k), what))
        return Discard(p);
    } else if (!Check(cudnnCreateTensorDescriptor(&p.channels), what) ||
               !Check(cudnnDeriveBNTensorDescriptor(p.channels, p.x, CUDNN_BATCHNORM_SPATIAL), what)) {
      return Discard(p);
    }
    return &norm_plans_.emplace(key, p).first->second;
  }
  const NormPlan* Plan(const BatchNormGeometry& g, int batch) {
    return NormPlanFor(g.channels, g.plane, batch, nullptr);
  }
  const NormPlan* Plan(const LrnGeometry& g, int batch) {
    return NormPlanFor(g.channels, g.plane, batch, &g);
  }

  // A batch norm layer's statistics between its passes, kept under `key`,
  // per channel: the mean, 1/√(var + eps) and the unbiased variance as cuDNN
  // writes them, then the running mean that cuDNN insists on updating (with
  // a factor of 1, to the batch's: never read). Made room for by the training pass.
  float* Stats(const void* key, int channels) {
    cudaError_t e = cudaSuccess;
    float* s = batch_stats_[key].Get(4 * static_cast<size_t>(channels), &e);
    return Check(e, "batch norm statistics") ? s : nullptr;
  }
  const float* KeptStats(const void* key) {
    auto it = batch_stats_.find(key);
    if (it != batch_stats_.end() && it->second.data()) return it->second.data();
    Fail("batch norm's backward pass before its training pass");
    return nullptr;
  }

  // A plan whose making failed: its descriptors go, and the op does nothing.
  template <typename P>
  static const P* Discard(P& p) {
    Destroy(p);
    return nullptr;
  }

  void Fail(const std::string& message) {
    if (status_.ok()) status_ = Status::Unavailable(name_ + ": " + message);
  }

  std::string name_;
  cublasHandle_t blas_;
  cudnnHandle_t dnn_;
  Status status_;
  std::map<std::tuple<int, int, int, int, int, int, int, int>, ConvPlan> conv_plans_;
  std::map<std::tuple<int, int, int, int, int, int, int, int, int>, PoolPlan> pool_plans_;
  std::map<std::tuple<int, int, int, int, float, float, float>, NormPlan> norm_plans_;
  std::map<const void*, Scratch<float>> batch_stats_;  // a layer's, under its host vectors' address
  Scratch<float> unwanted_dx_;
  Device* device_ = nullptr;  // the workspace's
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  Scratch<int32_t> labels_, row_hit_;
  Scratch<double> row_loss_;
  Scratch<float> ones_;
  const float* ones_at_ = nullptr;  // ones_count_ ones
  int ones_count_ = 0;
  const int32_t* labels_from_ = nullptr;  // the host labels labels_at_ holds a copy of
  const int32_t* labels_at_ = nullptr;
  int labels_batch_ = 0;
};

std::string ErrorText(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}
std::string ErrorText(cublasStatus_t e) { return std::string("cuBLAS ") + cublasGetStatusString(e); }
std::string ErrorText(cudnnStatus_t e) { return std::string("cuDNN ") + cudnnGetErrorString(e); }
bool Failed(cudaError_t e) { return e != cudaSuccess; }
bool Failed(cublasStatus_t e) { return e != CUBLAS_STATUS_SUCCESS; }
bool Failed(cudnnStatus_t e) { return e != CUDNN_STATUS_SUCCESS; }

template <typename E>
bool CudaOps::Check(E e, const char* what) {
  if (!Failed(e)) return true;
  Fail(std::string(what) + ": " + ErrorText(e));
  return false;
}

}  // namespace
}  // namespace shoal

// The module's entries (LoadCudaOps, gpu_ops.cpp): the GpuOps it was built
// for, and the ops of GPU `ordinal`, or null with the reason in `why`.
extern "C" int shoal_cuda_ops_version() { return shoal::kGpuOpsVersion; }

extern "C" shoal::GpuOps* shoal_open_cuda_ops(int ordinal, char* why, size_t why_size) {
  auto fail = [&](const std::string& message) -> shoal::GpuOps* {
    std::snprintf(why, why_size, "cuda:%d: %s", ordinal, message.c_str());
    return nullptr;
  };
  if (cudaError_t e = cudaSetDevice(ordinal); e != cudaSuccess) return fail(shoal::ErrorText(e));
  cublasHandle_t blas = nullptr;
  if (cublasStatus_t e = cublasCreate(&blas); e != CUBLAS_STATUS_SUCCESS) return fail(shoal::ErrorText(e));
  cudnnHandle_t dnn = nullptr;
  if (cudnnStatus_t e = cudnnCreate(&dnn); e != CUDNN_STATUS_SUCCESS) {
    cublasDestroy(blas);
    return fail(shoal::ErrorText(e));
  }
  return new shoal::CudaOps(ordinal, blas, dnn);
}
