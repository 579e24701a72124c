// Tests for lib/device/step_memory.cpp: a small computation run pass by pass
// through the manager on a host device gives the bits it gives in host
// memory, at the smallest budget (everything swapped through the pool, the
// next pass's inputs prefetched) and at larger ones, with the copies the plan
// predicts and the device never past its budget.
#include "device/step_memory.h"

#include <doctest/doctest.h>

#include <deque>
#include <functional>
#include <map>

#include "device/host_device.h"

namespace shoal {
namespace {

using Lifetime = StepBuffer::Lifetime;
constexpr int kFloats = 256;

struct Computation {
  Tensor x{{kFloats}}, w{{kFloats}}, f{{kFloats}}, h{{kFloats}}, g{{kFloats}}, dw{{kFloats}};
  StepOps ops;
  std::vector<std::function<void()>> passes;

  Computation() {
    const int bx = ops.AddBuffer("x", Lifetime::kInput, false, &x),
              bw = ops.AddBuffer("w", Lifetime::kInput, true, &w),
              bf = ops.AddBuffer("f", Lifetime::kStep, false, &f),
              bh = ops.AddBuffer("h", Lifetime::kStep, false, &h),
              bg = ops.AddBuffer("g", Lifetime::kGradient, false, &g),
              bdw = ops.AddBuffer("dw", Lifetime::kOutput, true, &dw);
    Pass({{bx, true, false}, {bw, true, false}, {bf, false, true}}, [this] {
      for (int i = 0; i < kFloats; ++i) f[i] = x[i] * w[i];
    });
    Pass({{bf, true, false}, {bh, false, true}}, [this] {
      for (int i = 0; i < kFloats; ++i) h[i] = f[i] + 1.0f;
    });
    Pass({{bh, true, false}, {bg, true, true}}, [this] {
      for (int i = 0; i < kFloats; ++i) g[i] += 2.0f * h[i];
    });
    Pass({{bx, true, false}, {bg, true, true}}, [this] {
      for (int i = 0; i < kFloats; ++i) g[i] += x[i];
    });
    Pass({{bg, true, false}, {bw, true, false}, {bdw, false, true}}, [this] {
      for (int i = 0; i < kFloats; ++i) dw[i] = g[i] * w[i];
    });
  }
  void Pass(std::vector<BufferUse> uses, std::function<void()> compute) {
    ops.ops.push_back({"pass " + std::to_string(passes.size()), std::move(uses)});
    passes.push_back(std::move(compute));
  }
  // What the step's inputs are before step `step` (the exchange's values, the batch).
  void SetInputs(int step) {
    for (int i = 0; i < kFloats; ++i) {
      x[i] = 0.01f * static_cast<float>((i * 7 + step) % 13);
      w[i] = 1.0f + 0.001f * static_cast<float>(i + step);
    }
  }
};

std::vector<float> Reference(int steps) {
  Computation c;
  std::vector<float> all;
  for (int s = 0; s < steps; ++s) {
    c.SetInputs(s);
    c.g.Fill(0.0f);
    for (auto& pass : c.passes) pass();
    all.insert(all.end(), c.dw.data(), c.dw.data() + kFloats);
  }
  return all;
}

TEST_CASE("passes run through the manager give the bits they give in host memory") {
  constexpr int kSteps = 3;
  const std::vector<float> want = Reference(kSteps);
  for (size_t budget : {size_t{6 * 1024}, size_t{8 * 1024}, size_t{1} << 20}) {
    CAPTURE(budget);
    Computation c;
    HostDevice device(budget);
    DeviceMemoryPlan plan;
    REQUIRE(PlanDeviceMemory(c.ops, budget, &plan).ok());
    std::unique_ptr<StepMemory> memory;
    REQUIRE(StepMemory::Create(&device, c.ops, plan, 5000, &memory).ok());
    std::vector<float> got;
    for (int s = 0; s < kSteps; ++s) {
      c.SetInputs(s);
      for (size_t op = 0; op < c.passes.size(); ++op) {
        REQUIRE(memory->Before(op).ok());
        c.passes[op]();
        REQUIRE(memory->After(op).ok());
        CHECK_FALSE(c.x.bound());
      }
      REQUIRE(memory->EndStep().ok());
      got.insert(got.end(), c.dw.data(), c.dw.data() + kFloats);
    }
    CHECK(got == want);
    CHECK(device.peak_bytes() <= budget);
    CHECK(device.bytes_to_device() == kSteps * plan.bytes_to_device);
    CHECK(device.bytes_to_host() == kSteps * plan.bytes_to_host);
  }
}

TEST_CASE("at the smallest budget local data is swapped; a tensor larger than planned is refused by name") {
  Computation c;
  HostDevice device(6 * 1024);
  DeviceMemoryPlan plan;
  REQUIRE(PlanDeviceMemory(c.ops, 6 * 1024, &plan).ok());
  // Pinning the parameters lowers every pass's share of the pool the most.
  for (size_t b = 0; b < c.ops.buffers.size(); ++b) CHECK(plan.pinned[b] == c.ops.buffers[b].param);
  CHECK(plan.peak == 2 * 1024);
  CHECK(plan.device_bytes() == 6 * 1024);
  std::unique_ptr<StepMemory> memory;
  REQUIRE(StepMemory::Create(&device, c.ops, plan, 5000, &memory).ok());
  c.f.Reshape({2 * kFloats});
  const Status refused = memory->Before(0);
  CHECK_FALSE(refused.ok());
  CHECK(refused.message().find("'f' holds 2048 bytes at 'pass 0'") != std::string::npos);
}

// Records what the manager asks it to page-lock.
class PinRecordingDevice : public HostDevice {
 public:
  using HostDevice::HostDevice;
  void PinHost(void* host, size_t bytes) override { pinned[host] = bytes; }
  std::map<void*, size_t> pinned;
};

TEST_CASE("the homes that copies read or write are offered to the device to page-lock, each once, whole") {
  for (size_t budget : {size_t{6 * 1024}, size_t{1} << 20}) {
    CAPTURE(budget);
    Computation c;
    PinRecordingDevice device(budget);
    DeviceMemoryPlan plan;
    REQUIRE(PlanDeviceMemory(c.ops, budget, &plan).ok());
    std::unique_ptr<StepMemory> memory;
    REQUIRE(StepMemory::Create(&device, c.ops, plan, 5000, &memory).ok());
    std::map<void*, size_t> want;
    for (size_t op = 0; op < c.ops.ops.size(); ++op)
      for (size_t k = 0; k < c.ops.ops[op].uses.size(); ++k) {
        const BufferMove& m = plan.moves[op][k];
        if (m.before != BufferMove::Before::kCopyIn && !m.copy_out) continue;
        Tensor* t = c.ops.buffers[c.ops.ops[op].uses[k].buffer].tensor;
        want[t->home()] = t->size() * sizeof(float);
      }
    CHECK(!want.empty());
    CHECK(device.pinned == want);
    // The inputs and the gradient out move at any budget; the features only when swapped.
    CHECK(device.pinned.count(c.x.home()) == 1);
    CHECK(device.pinned.count(c.dw.home()) == 1);
    CHECK(device.pinned.count(c.f.home()) == (budget < 8 * 1024 ? 1u : 0u));
  }
}

}  // namespace
}  // namespace shoal
