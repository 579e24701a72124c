// Tests for lib/ops/gpu_ops: the seam through which a worker's training
// passes run on a GPU, exercised here with a GpuOps that computes on the
// host and records each call. A small CNN (convolution, relu, pooling,
// flatten, fully connected, softmax loss) and a small convnet of every other
// layer with a GPU form (batch norm, add, LRN, pools rounding up, average
// pooling, concat, dropout), run through a device memory manager with it
// current, send every op of both passes to it, none of evaluation's, and
// give what the host gives; a failing op stops the pass naming the layer;
// the layers without a GPU form are named; and LoadCudaOps fails, naming
// the GPU, where there is none.
#include "ops/gpu_ops.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "config/job.h"
#include "device/host_device.h"
#include "device/step_memory.h"
#include "net/partitioned_net.h"
#include "ops/batch_norm.h"
#include "ops/convolution.h"
#include "ops/elementwise.h"
#include "ops/fully_connected.h"
#include "ops/lrn.h"
#include "ops/pooling.h"
#include "ops/softmax_loss.h"
#include "plan/plan.h"
#include "train/device_memory_fit.h"

namespace shoal {
namespace {

// Computes each op on the host (with itself no longer current, so that the
// host op does not hand it back) and counts the calls by op.
class HostAsGpu : public GpuOps {
 public:
  const char* name() const override { return "host-as-gpu"; }
  void TakeWorkspaceFrom(Device*) override {}  // the host ops keep their own scratch
  Status TakeStatus() override {
    Status s = std::move(status);
    status = Status::Ok();
    return s;
  }

  void FullyConnectedForward(int batch, int in, int out, const float* x, const float* w, const float* b,
                             float* y) override {
    Host("fc forward", [&] { shoal::FullyConnectedForward(batch, in, out, x, w, b, y); });
  }
  void FullyConnectedBackward(int batch, int in, int out, const float* x, const float* w, const float* dy,
                              float* dx, float* dw, float* db, GradWrite dx_write) override {
    Host("fc backward",
         [&] { shoal::FullyConnectedBackward(batch, in, out, x, w, dy, dx, dw, db, dx_write); });
  }
  void ConvolutionForward(const ConvGeometry& g, int batch, const float* x, const float* w, const float* b,
                          float* y) override {
    // No bias (null), as a GPU takes it: the host's ops take a zero one.
    const std::vector<float> zero(b ? 0 : g.filters, 0.0f);
    Host("conv forward",
         [&] { shoal::ConvolutionForward(g, batch, x, w, b ? b : zero.data(), y, &scratch); });
  }
  void ConvolutionBackward(const ConvGeometry& g, int batch, const float* x, const float* w, const float* dy,
                           float* dx, float* dw, float* db, GradWrite dx_write) override {
    std::vector<float> unread(db ? 0 : g.filters);
    Host("conv backward", [&] {
      shoal::ConvolutionBackward(g, batch, x, w, dy, dx, dw, db ? db : unread.data(), dx_write, &scratch);
    });
  }
  void PoolForward(const PoolGeometry& g, int batch, const float* x, float* y) override {
    Host("pool forward", [&] { shoal::PoolForward(g, batch, x, y, &argmax); });
  }
  void PoolBackward(const PoolGeometry& g, int batch, const float* x, const float* y, const float* dy,
                    float* dx, GradWrite write) override {
    Host("pool backward", [&] { shoal::PoolBackward(g, batch, x, y, dy, argmax, dx, write); });
  }
  void BatchNormTrainForward(const BatchNormGeometry& g, int batch, const float* x, const float* gamma,
                             const float* beta, float* y, const void* stats) override {
    BatchStats& b = batch_stats[stats];
    Host("bn forward",
         [&] { shoal::BatchNormTrainForward(g, batch, x, gamma, beta, y, &b.mean, &b.inv_std, &b.var); });
  }
  void BatchNormInferenceForward(const BatchNormGeometry& g, int batch, const float* x, const float* gamma,
                                 const float* beta, const float* running_mean, const float* running_var,
                                 float* y) override {
    Host("bn inference",
         [&] { shoal::BatchNormInferenceForward(g, batch, x, gamma, beta, running_mean, running_var, y); });
  }
  void BatchNormBackward(const BatchNormGeometry& g, int batch, const float* x, const float* dy,
                         const float* gamma, const void* stats, float* dx, float* dgamma, float* dbeta,
                         GradWrite write) override {
    const BatchStats& b = batch_stats.at(stats);
    Host("bn backward", [&] {
      shoal::BatchNormBackward(g, batch, x, dy, gamma, b.mean, b.inv_std, dx, dgamma, dbeta, write);
    });
  }
  void BatchNormRunningChanges(const BatchNormGeometry& g, float momentum, const float* running_mean,
                               const float* running_var, const void* stats, float* mean_change,
                               float* var_change) override {
    const BatchStats& b = batch_stats.at(stats);
    Host("bn running changes", [&] {
      shoal::BatchNormRunningChanges(g, momentum, running_mean, running_var, b.mean, b.var, mean_change,
                                     var_change);
    });
  }
  void LrnForward(const LrnGeometry& g, int batch, const float* x, float* y) override {
    Host("lrn forward", [&] { shoal::LrnForward(g, batch, x, y, &lrn_scale[x]); });
  }
  void LrnBackward(const LrnGeometry& g, int batch, const float* x, const float* y, const float* dy,
                   float* dx, GradWrite write) override {
    Host("lrn backward", [&] { shoal::LrnBackward(g, batch, x, y, dy, lrn_scale.at(x), dx, write); });
  }
  void CopyRows(int rows, size_t cols, const float* x, size_t x_stride, float* y, size_t y_stride,
                GradWrite write) override {
    Host("copy rows", [&] { shoal::CopyRows(rows, cols, x, x_stride, y, y_stride, write); });
  }
  void DropoutForward(size_t n, float ratio, uint64_t key, const float* x, float* y) override {
    Host("dropout forward", [&] { shoal::DropoutForward(n, ratio, key, x, y); });
  }
  void DropoutBackward(size_t n, float ratio, uint64_t key, const float* dy, float* dx,
                       GradWrite write) override {
    Host("dropout backward", [&] { shoal::DropoutBackward(n, ratio, key, dy, dx, write); });
  }
  void ReluForward(size_t n, const float* x, float* y) override {
    Host("relu forward", [&] { shoal::ReluForward(n, x, y); });
  }
  void ReluBackward(size_t n, const float* y, const float* dy, float* dx, GradWrite write) override {
    Host("relu backward", [&] { shoal::ReluBackward(n, y, dy, dx, write); });
  }
  void SigmoidForward(size_t n, const float* x, float* y) override {
    Host("sigmoid forward", [&] { shoal::SigmoidForward(n, x, y); });
  }
  void SigmoidBackward(size_t n, const float* y, const float* dy, float* dx, GradWrite write) override {
    Host("sigmoid backward", [&] { shoal::SigmoidBackward(n, y, dy, dx, write); });
  }
  void IdentityForward(size_t n, const float* x, float* y) override {
    Host("identity forward", [&] { shoal::IdentityForward(n, x, y); });
  }
  void IdentityBackward(size_t n, const float* dy, float* dx, GradWrite write) override {
    Host("identity backward", [&] { shoal::IdentityBackward(n, dy, dx, write); });
  }
  float SoftmaxCrossEntropyForward(int batch, int classes, const float* logits, const int32_t* labels,
                                   float* prob, int* correct) override {
    float loss = 0.0f;
    Host("softmax forward",
         [&] { loss = shoal::SoftmaxCrossEntropyForward(batch, classes, logits, labels, prob, correct); });
    return loss;
  }
  void SoftmaxCrossEntropyBackward(int batch, int classes, const float* prob, const int32_t* labels,
                                   float* dlogits) override {
    Host("softmax backward",
         [&] { shoal::SoftmaxCrossEntropyBackward(batch, classes, prob, labels, dlogits); });
  }

  std::map<std::string, int> calls;
  std::string fail_at;  // an op that fails, as a kernel might
  Status status;

 private:
  template <typename Fn>
  void Host(const char* op, Fn fn) {
    ++calls[op];
    if (op == fail_at && status.ok()) status = Status::Unavailable("host-as-gpu: cudaErrorIllegalAddress");
    ScopedGpuOps host(nullptr);
    fn();
  }
  // As a layer keeps them for the host ops (pooling's winners from forward
  // to backward), or a GPU in its own memory (by key).
  std::vector<float> scratch;
  std::vector<int32_t> argmax;
  struct BatchStats {
    std::vector<float> mean, inv_std, var;
  };
  std::map<const void*, BatchStats> batch_stats;
  std::map<const float*, std::vector<float>> lrn_scale;  // by x: one LRN a source
};

const char* const kCnn =
    "model:\n"
    "  layers:\n"
    "    - {name: data, type: data, shape: [2, 8, 8]}\n"
    "    - {name: conv, type: convolution, srclayers: data, num_output: 3, kernel: 3, pad: 1}\n"
    "    - {name: relu, type: relu, srclayers: conv}\n"
    "    - {name: pool, type: pooling, srclayers: relu, kernel: 2}\n"
    "    - {name: flat, type: flatten, srclayers: pool}\n"
    "    - {name: fc, type: fully_connected, srclayers: flat, num_output: 5}\n"
    "    - {name: sig, type: sigmoid, srclayers: fc}\n"
    "    - {name: out, type: fully_connected, srclayers: sig, num_output: 4}\n"
    "    - {name: loss, type: softmax_loss, srclayers: [out, data]}\n"
    "train: {batch_size: 6, steps: 1, device: cuda}\n";

// Every other layer with a GPU form: a residual block with batch norm, LRN,
// a pool rounding up (its last windows overhang), an inception-style join of
// a convolution and an average pool, global average pooling, a vector's
// batch norm and dropout.
const char* const kConvnet =
    "model:\n"
    "  layers:\n"
    "    - {name: data, type: data, shape: [3, 10, 10]}\n"
    "    - {name: conv1, type: convolution, srclayers: data, num_output: 4, kernel: 3, pad: 1, bias: false}\n"
    "    - {name: bn1, type: batch_norm, srclayers: conv1}\n"
    "    - {name: relu1, type: relu, srclayers: bn1}\n"
    "    - {name: conv2, type: convolution, srclayers: relu1, num_output: 4, kernel: 3, pad: 1}\n"
    "    - {name: sum, type: add, srclayers: [conv2, relu1]}\n"
    "    - {name: lrn, type: lrn, srclayers: sum, local_size: 3, alpha: 0.5}\n"
    "    - {name: pool, type: pooling, srclayers: lrn, kernel: 3, stride: 2, ceil_mode: true}\n"
    "    - {name: a, type: convolution, srclayers: pool, num_output: 3, kernel: 1}\n"
    "    - {name: b, type: pooling, srclayers: pool, pool: avg, kernel: 3, stride: 1, pad: 1}\n"
    "    - {name: cat, type: concat, srclayers: [a, b]}\n"
    "    - {name: gap, type: pooling, srclayers: cat, pool: avg, global: true}\n"
    "    - {name: flat, type: flatten, srclayers: gap}\n"
    "    - {name: fc, type: fully_connected, srclayers: flat, num_output: 6}\n"
    "    - {name: bn2, type: batch_norm, srclayers: fc}\n"
    "    - {name: drop, type: dropout, srclayers: bn2}\n"
    "    - {name: out, type: fully_connected, srclayers: drop, num_output: 4}\n"
    "    - {name: loss, type: softmax_loss, srclayers: [out, data]}\n"
    "train: {batch_size: 6, steps: 1, device: cuda}\n";

Plan MakePlan(const std::string& yaml) {
  JobConfig job;
  Status s = ParseJob(yaml, "cnn.yaml", &job);
  INFO(s.ToString());
  REQUIRE(s.ok());
  Partition partition;
  partition.group_size = 1;
  partition.dims.assign(job.layers.size(), 0);
  partition.locations.assign(job.layers.size(), 0);
  PlanOptions options;
  options.endpoints = {"inproc://gpu-ops-test-server"};  // never dialled
  Plan plan;
  s = shoal::MakePlan(job, options, partition, &plan);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return plan;
}

constexpr int kBatch = 6;

// One training step of the CNN on fixed values: the loss and every gradient.
struct Run {
  std::unique_ptr<PartitionedNet> net;
  float loss = 0.0f;
  std::vector<std::vector<float>> grads;

  explicit Run(const Plan& plan) {
    Status s = PartitionedNet::Build(plan, 0, nullptr, &net);
    INFO(s.ToString());
    REQUIRE(s.ok());
    net->Allocate(kBatch);
    const std::vector<Param*> params = net->params();
    for (size_t k = 0; k < params.size(); ++k)
      for (size_t i = 0; i < params[k]->value.size(); ++i)
        params[k]->value[i] = 0.5f * std::sin(1.1f * static_cast<float>(i) + 0.3f * static_cast<float>(k));
    Tensor& data = net->data_layer().data();
    for (size_t i = 0; i < data.size(); ++i) data[i] = std::cos(0.37f * static_cast<float>(i));
    for (int r = 0; r < kBatch; ++r) net->data_layer().labels()[r] = r % 4;
  }
  void Step() {
    Status s = net->Forward(Phase::kTrain, 0);
    INFO(s.ToString());
    REQUIRE(s.ok());
    loss = net->loss_layer().loss();
    s = net->Backward(0);
    INFO(s.ToString());
    REQUIRE(s.ok());
    for (Param* p : net->params()) grads.emplace_back(p->grad.data(), p->grad.data() + p->grad.size());
  }
};

// A run's training passes on a host device of twice its step's data, their
// ops sent to a HostAsGpu (the device made first: the manager frees into it).
struct OnHostAsGpu {
  std::unique_ptr<HostDevice> memory;
  std::unique_ptr<StepMemory> step_memory;
  HostAsGpu gpu;

  explicit OnHostAsGpu(Run& run) {
    StepOps ops = run.net->TrainingStepOps();
    DeviceMemoryPlan placement;
    REQUIRE(PlanDeviceMemory(ops, ops.TotalBytes() * 2, &placement).ok());
    memory = std::make_unique<HostDevice>(ops.TotalBytes() * 2);
    REQUIRE(StepMemory::Create(memory.get(), std::move(ops), std::move(placement), 5000, &step_memory).ok());
    run.net->UseDeviceMemory(step_memory.get(), &gpu);
  }
};

TEST_CASE("ScopedGpuOps makes its ops current for its scope and restores what was") {
  HostAsGpu a, b;
  CHECK(CurrentGpuOps() == nullptr);
  {
    ScopedGpuOps on_a(&a);
    CHECK(CurrentGpuOps() == &a);
    {
      ScopedGpuOps on_b(&b);
      CHECK(CurrentGpuOps() == &b);
    }
    CHECK(CurrentGpuOps() == &a);
  }
  CHECK(CurrentGpuOps() == nullptr);
}

// One training step of `yaml`'s net on the host and on a HostAsGpu: the
// same loss, the gradients within `tolerance` of the net's largest, every op
// of the training passes sent to the GPU ops (`want`: the calls by op), none
// of evaluation's.
void CheckOnGpuOps(const std::string& yaml, float tolerance, const std::map<std::string, int>& want) {
  const Plan plan = MakePlan(yaml);
  Run host(plan);
  host.Step();

  Run device(plan);
  REQUIRE(CheckRunsOnGpu(*device.net).ok());
  OnHostAsGpu on(device);
  HostAsGpu& gpu = on.gpu;
  device.Step();

  // The host's convolution runs on oneDNN where the build has it, the fake
  // GPU's on im2col + sgemm: equal to rounding, not to the bit.
  CHECK(device.loss == doctest::Approx(host.loss).epsilon(1e-6));
  REQUIRE(device.grads.size() == host.grads.size());
  float largest = 0.0f;
  for (const auto& grad : host.grads)
    for (float g : grad) largest = std::max(largest, std::fabs(g));
  for (size_t k = 0; k < host.grads.size(); ++k) {
    float worst = 0.0f;
    for (size_t i = 0; i < host.grads[k].size(); ++i)
      worst = std::max(worst, std::fabs(device.grads[k][i] - host.grads[k][i]));
    INFO("gradient " << k << ": furthest apart " << worst << ", the net's largest " << largest);
    CHECK(worst <= tolerance * largest);
  }
  CHECK(largest > 0.0f);
  std::string calls;
  for (const auto& [op, n] : gpu.calls) calls += op + " " + std::to_string(n) + ", ";
  INFO("calls: " << calls);
  CHECK(gpu.calls == want);

  // Evaluation runs on the host: nothing more reaches the GPU ops.
  REQUIRE(device.net->Forward(Phase::kTest, 1).ok());
  CHECK(gpu.calls == want);
  CHECK(CurrentGpuOps() == nullptr);
}

TEST_CASE(
    "a CNN's training passes on device memory with GPU ops send every op to them, computing what the host "
    "does") {
  // Both passes of every layer but data; the first layer's source (data)
  // wants no gradient, so conv backward is still called (for dw).
  CheckOnGpuOps(kCnn, 1e-5f,
                {{"conv forward", 1},
                 {"conv backward", 1},
                 {"relu forward", 1},
                 {"relu backward", 1},
                 {"pool forward", 1},
                 {"pool backward", 1},
                 {"identity forward", 1},
                 {"identity backward", 1},
                 {"fc forward", 2},
                 {"fc backward", 2},
                 {"sigmoid forward", 1},
                 {"sigmoid backward", 1},
                 {"softmax forward", 1},
                 {"softmax backward", 1}});
}

TEST_CASE("so do a convnet's: batch norm, residual sums, LRN, pools rounding up, concat, dropout") {
  // The add layer copies its first source and adds the second (identity
  // forward and backward), then hands its gradient to both; flatten copies.
  // The batch norms over six records magnify the rounding by which the
  // convolutions differ (oneDNN's on the host, im2col's here); with one
  // algorithm for both the gradients agree within 1e-5 of the largest.
  CheckOnGpuOps(
      kConvnet, 1e-3f,
      {{"conv forward", 3},       {"conv backward", 3},    {"bn forward", 2},      {"bn backward", 2},
       {"bn running changes", 2}, {"relu forward", 1},     {"relu backward", 1},   {"identity forward", 2},
       {"identity backward", 4},  {"lrn forward", 1},      {"lrn backward", 1},    {"pool forward", 3},
       {"pool backward", 3},      {"copy rows", 4},        {"fc forward", 2},      {"fc backward", 2},
       {"dropout forward", 1},    {"dropout backward", 1}, {"softmax forward", 1}, {"softmax backward", 1}});
}

TEST_CASE("an op that fails on the GPU stops the pass, naming the layer and the pass") {
  const Plan plan = MakePlan(kCnn);
  Run device(plan);
  OnHostAsGpu on(device);
  HostAsGpu& gpu = on.gpu;
  gpu.fail_at = "pool forward";
  Status s = device.net->Forward(Phase::kTrain, 0);
  CHECK(s.message() == "pool forward: host-as-gpu: cudaErrorIllegalAddress");
  gpu.fail_at = "fc backward";
  REQUIRE(device.net->Forward(Phase::kTrain, 1).ok());
  s = device.net->Backward(1);
  CHECK(s.message() == "out backward: host-as-gpu: cudaErrorIllegalAddress");
}

TEST_CASE("the layers with no GPU form are named, by the worker's check and by dl-plan's") {
  std::string yaml = kCnn;
  yaml.replace(yaml.find("{name: sig, type: sigmoid"), std::string("{name: sig, type: sigmoid").size(),
               "{name: sig, type: batch_norm, sync: true");
  const Plan plan = MakePlan(yaml);
  std::unique_ptr<PartitionedNet> net;
  REQUIRE(PartitionedNet::Build(plan, 0, nullptr, &net).ok());
  Status s = CheckRunsOnGpu(*net);
  CHECK_FALSE(s.ok());
  CHECK(s.message().find("train.device is cuda, but layer 'sig' (batch_norm) has no GPU form") == 0);
  s = CheckDeviceMemoryFits(plan);
  CHECK(s.message().find("worker 0: train.device is cuda, but layer 'sig' (batch_norm)") == 0);
}

TEST_CASE("LoadCudaOps where no GPU can be opened fails naming the GPU, not crashing") {
  // This machine may have CUDA's libraries and no GPU, or neither: either way
  // the failure says which GPU it could not open. (Where a GPU is, the GPU
  // tests open it; here an ordinal past any machine's GPUs.)
  std::unique_ptr<GpuOps> ops;
  const Status s = LoadCudaOps(99, &ops);
  CHECK_FALSE(s.ok());
  CHECK(ops == nullptr);
  INFO(s.message());
  CHECK(s.message().find("cuda:99") == 0);
}

}  // namespace
}  // namespace shoal
