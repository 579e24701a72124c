// Tests for lib/ops/gpu_ops: the seam through which a worker's training
// passes run on a GPU, exercised here with a GpuOps that computes on the
// host and records each call. A small CNN (convolution, relu, pooling,
// flatten, fully connected, softmax loss) run through a device memory
// manager with it current sends every op of both passes to it, none of
// evaluation's, and gives what the host gives; a failing op stops the
// pass naming the layer; the layers without a GPU form are named; and
// LoadCudaOps fails, naming the GPU, where there is none.
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
#include "ops/convolution.h"
#include "ops/elementwise.h"
#include "ops/fully_connected.h"
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
    Host("conv forward", [&] { shoal::ConvolutionForward(g, batch, x, w, b, y, &scratch); });
  }
  void ConvolutionBackward(const ConvGeometry& g, int batch, const float* x, const float* w, const float* dy,
                           float* dx, float* dw, float* db, GradWrite dx_write) override {
    Host("conv backward",
         [&] { shoal::ConvolutionBackward(g, batch, x, w, dy, dx, dw, db, dx_write, &scratch); });
  }
  void PoolForward(const PoolGeometry& g, int batch, const float* x, float* y) override {
    Host("pool forward", [&] { shoal::PoolForward(g, batch, x, y, &argmax); });
  }
  void PoolBackward(const PoolGeometry& g, int batch, const float* x, const float* y, const float* dy,
                    float* dx, GradWrite write) override {
    Host("pool backward", [&] { shoal::PoolBackward(g, batch, x, y, dy, argmax, dx, write); });
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
  // As a layer keeps them for the host ops (pooling's winners from forward to backward).
  std::vector<float> scratch;
  std::vector<int32_t> argmax;
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

TEST_CASE(
    "a CNN's training passes on device memory with GPU ops send every op to them, computing what the host "
    "does") {
  const Plan plan = MakePlan(kCnn);
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
  for (size_t k = 0; k < host.grads.size(); ++k) {
    float largest = 0.0f, worst = 0.0f;
    for (size_t i = 0; i < host.grads[k].size(); ++i) {
      largest = std::max(largest, std::fabs(host.grads[k][i]));
      worst = std::max(worst, std::fabs(device.grads[k][i] - host.grads[k][i]));
    }
    INFO("gradient " << k << ": largest " << largest << ", furthest apart " << worst);
    CHECK(largest > 0.0f);
    CHECK(worst <= 1e-5f * largest);
  }
  // Both passes of every layer but data went to the GPU ops; the first
  // layer's source (data) wants no gradient, so conv backward is still called (for dw).
  const std::map<std::string, int> want = {
      {"conv forward", 1},    {"conv backward", 1},   {"relu forward", 1},     {"relu backward", 1},
      {"pool forward", 1},    {"pool backward", 1},   {"identity forward", 1}, {"identity backward", 1},
      {"fc forward", 2},      {"fc backward", 2},     {"sigmoid forward", 1},  {"sigmoid backward", 1},
      {"softmax forward", 1}, {"softmax backward", 1}};
  CHECK(gpu.calls == want);

  // Evaluation runs on the host: nothing more reaches the GPU ops.
  REQUIRE(device.net->Forward(Phase::kTest, 1).ok());
  CHECK(gpu.calls == want);
  CHECK(CurrentGpuOps() == nullptr);
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
               "{name: sig, type: dropout");
  const Plan plan = MakePlan(yaml);
  std::unique_ptr<PartitionedNet> net;
  REQUIRE(PartitionedNet::Build(plan, 0, nullptr, &net).ok());
  Status s = CheckRunsOnGpu(*net);
  CHECK_FALSE(s.ok());
  CHECK(s.message().find("train.device is cuda, but layer 'sig' (dropout) has no GPU form") == 0);
  s = CheckDeviceMemoryFits(plan);
  CHECK(s.message().find("worker 0: train.device is cuda, but layer 'sig' (dropout)") == 0);
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
