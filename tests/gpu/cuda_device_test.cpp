// GPU tests of lib/device/cuda_device.cpp: the budget on cudaMalloc, copies
// and zeroing on the copy stream, and GeePS's memory manager staging a step's
// buffers through real device memory under a budget (each pass's buffers are
// read back from the GPU while bound and compared with their host homes).
// Exits 77 (ctest: skipped) on a machine without a GPU.
#define DOCTEST_CONFIG_IMPLEMENT
#include "device/cuda_device.h"

#include <cuda_runtime_api.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "device/step_memory.h"

namespace shoal {
namespace {

std::unique_ptr<Device> Open(size_t budget) {
  std::unique_ptr<Device> device;
  const Status s = OpenCudaDevice(0, budget, &device);
  REQUIRE_MESSAGE(s.ok(), s.message());
  return device;
}

TEST_CASE("cudaMalloc within the budget; past it refused by name") {
  auto device = Open(1 << 20);
  void *a = nullptr, *b = nullptr;
  REQUIRE(device->Allocate(768 * 1024, &a).ok());
  const Status refused = device->Allocate(512 * 1024, &b);
  CHECK_FALSE(refused.ok());
  CHECK(refused.message().find("cuda:0") != std::string::npos);
  device->Free(a, 768 * 1024);
  CHECK(device->bytes_in_use() == 0);
}

TEST_CASE("64 MiB through the device and back, part of it zeroed there") {
  const size_t floats = size_t{16} << 20;
  auto device = Open(floats * 4);
  void* memory = nullptr;
  REQUIRE(device->Allocate(floats * 4, &memory).ok());
  std::vector<float> in(floats), out(floats, -1.0f);
  for (size_t i = 0; i < floats; ++i) in[i] = static_cast<float>(i % 1000);
  device->CopyToDevice(memory, in.data(), floats * 4);
  device->Zero(memory, floats * 2);
  device->CopyToHost(out.data(), memory, floats * 4);
  REQUIRE(device->WaitFor(device->Mark(), 30000).ok());
  CHECK(out[floats / 2 - 1] == 0.0f);
  for (size_t i = floats / 2; i < floats; ++i)
    if (out[i] != in[i]) FAIL("element " << i << " came back " << out[i] << ", not " << in[i]);
  device->Free(memory, floats * 4);
}

TEST_CASE("the memory manager stages each pass's buffers onto the GPU under a budget") {
  using Lifetime = StepBuffer::Lifetime;
  constexpr int kFloats = 1 << 16;
  Tensor a({kFloats}), b({kFloats}), c({kFloats});
  for (int i = 0; i < kFloats; ++i) a[i] = 1.0f + i, b[i] = 2.0f * i, c[i] = -1.0f * i;
  StepOps ops;
  const int ba = ops.AddBuffer("a", Lifetime::kInput, false, &a),
            bb = ops.AddBuffer("b", Lifetime::kInput, true, &b),
            bc = ops.AddBuffer("c", Lifetime::kInput, false, &c);
  // Passes that read and write (no kernel computes here: the values must
  // survive the round trips exactly).
  ops.ops.push_back({"pass 0", {{ba, true, true}, {bb, true, false}}});
  ops.ops.push_back({"pass 1", {{bb, true, false}, {bc, true, true}}});
  ops.ops.push_back({"pass 2", {{ba, true, false}, {bc, true, false}}});
  const size_t budget = 4 * size_t{kFloats} * 4;  // twice a pass's two buffers
  auto device = Open(budget);
  DeviceMemoryPlan plan;
  REQUIRE(PlanDeviceMemory(ops, budget, &plan).ok());
  std::unique_ptr<StepMemory> memory;
  REQUIRE(StepMemory::Create(device.get(), ops, plan, 30000, &memory).ok());
  const std::vector<float> a0(a.home(), a.home() + kFloats), c0(c.home(), c.home() + kFloats);
  for (int step = 0; step < 2; ++step) {
    for (size_t op = 0; op < ops.ops.size(); ++op) {
      REQUIRE(memory->Before(op).ok());
      for (const BufferUse& u : ops.ops[op].uses) {
        Tensor* t = ops.buffers[u.buffer].tensor;
        CHECK(t->bound());
        std::vector<float> on_gpu(kFloats);
        REQUIRE(cudaMemcpy(on_gpu.data(), t->data(), kFloats * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
        CHECK(std::equal(on_gpu.begin(), on_gpu.end(), t->home()));
      }
      REQUIRE(memory->After(op).ok());
    }
    REQUIRE(memory->EndStep().ok());
  }
  CHECK(std::vector<float>(a.home(), a.home() + kFloats) == a0);
  CHECK(std::vector<float>(c.home(), c.home() + kFloats) == c0);
  CHECK(device->peak_bytes() <= budget);
  CHECK(device->bytes_to_device() == 2 * plan.bytes_to_device);
  CHECK(device->bytes_to_host() == 2 * plan.bytes_to_host);
}

}  // namespace
}  // namespace shoal

int main(int argc, char** argv) {
  if (shoal::CudaDeviceCount() == 0) {
    std::printf("skipped: no GPU on this machine\n");
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
