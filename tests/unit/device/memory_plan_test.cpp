// Tests for lib/device/memory_plan.cpp: GeePS's Algorithm 1 over synthetic
// operation sequences (the refusal and its minimum, local data at the peak
// pinned first, parameters last), and the moves a placement implies.
#include "device/memory_plan.h"

#include <doctest/doctest.h>

#include <deque>

namespace shoal {
namespace {

using Lifetime = StepBuffer::Lifetime;
using Before = BufferMove::Before;

// A sequence over tensors of the given sizes (floats), kept at stable addresses.
struct Sequence {
  std::deque<Tensor> tensors;
  StepOps ops;
  int Buffer(const std::string& name, int floats, Lifetime lifetime, bool param) {
    tensors.emplace_back(Shape{floats});
    return ops.AddBuffer(name, lifetime, param, &tensors.back());
  }
  size_t Op(const std::string& name) {
    ops.ops.push_back({name, {}});
    return ops.ops.size() - 1;
  }
};

// Four passes, each a 4096-byte parameter and 1024 bytes of local data:
// the peak is 5120 bytes, the whole step 20480.
Sequence FourPasses() {
  Sequence s;
  for (int i = 0; i < 4; ++i) {
    const size_t op = s.Op("op" + std::to_string(i));
    s.ops.Use(op, s.Buffer("p" + std::to_string(i), 1024, Lifetime::kInput, true), true, false);
    s.ops.Use(op, s.Buffer("l" + std::to_string(i), 256, Lifetime::kStep, false), true, true);
  }
  return s;
}

std::vector<bool> Pinned(const DeviceMemoryPlan& plan, const StepOps& ops, const std::string& names) {
  std::vector<bool> want(ops.buffers.size(), false);
  for (size_t b = 0; b < ops.buffers.size(); ++b)
    want[b] = names.find(ops.buffers[b].name) != std::string::npos;
  return want;
}

TEST_CASE("a budget below twice the peak is refused, naming the minimum") {
  Sequence s = FourPasses();
  DeviceMemoryPlan plan;
  const Status refused = PlanDeviceMemory(s.ops, 10239, &plan);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.message().find("at least 10240 bytes") != std::string::npos);
  CHECK(refused.message().find("'op0'") != std::string::npos);
  REQUIRE(PlanDeviceMemory(s.ops, 10240, &plan).ok());
  CHECK(plan.peak == 5120);
  CHECK(plan.device_bytes() <= 10240);
  CHECK(plan.pinned == std::vector<bool>(8, false));  // nothing else fits beside the pool
}

TEST_CASE("the passes' scratch (a GPU's workspace) is kept free beside the plan, and named in its refusal") {
  Sequence s = FourPasses();
  s.ops.scratch_bytes = 2048;
  DeviceMemoryPlan plan;
  const Status refused = PlanDeviceMemory(s.ops, 12287, &plan);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.message().find(
            "and the 0.00 MiB kept for the convolutions' workspace: the two need at least 12288 "
            "bytes") != std::string::npos);
  // What took two local buffers beside the pool now leaves their room to the scratch.
  REQUIRE(PlanDeviceMemory(s.ops, 12288, &plan).ok());
  CHECK(plan.pinned == std::vector<bool>(8, false));
  CHECK(plan.budget == 12288);
  CHECK(plan.device_bytes() + s.ops.scratch_bytes <= 12288);
  REQUIRE(PlanDeviceMemory(s.ops, 14336, &plan).ok());
  CHECK(plan.pinned == Pinned(plan, s.ops, "l0 l1"));
}

TEST_CASE("local data used at the peak is pinned first, parameters only after all local data") {
  Sequence s = FourPasses();
  DeviceMemoryPlan plan;
  // Room for two more kilobytes beside the pool: the peak passes' local data.
  REQUIRE(PlanDeviceMemory(s.ops, 12288, &plan).ok());
  CHECK(plan.pinned == Pinned(plan, s.ops, "l0 l1"));
  CHECK(plan.peak == 5120);
  CHECK(plan.device_bytes() == 12288);
  // With every local buffer pinned the peak falls to one parameter, and
  // parameters are pinned while the rest fits.
  REQUIRE(PlanDeviceMemory(s.ops, 20480, &plan).ok());
  CHECK(plan.pinned == Pinned(plan, s.ops, "l0 l1 l2 l3 p0 p1"));
  CHECK(plan.peak == 4096);
  CHECK(plan.device_bytes() == 20480);
  REQUIRE(PlanDeviceMemory(s.ops, 1 << 20, &plan).ok());
  CHECK(plan.pinned == std::vector<bool>(8, true));
  CHECK(plan.pool_bytes() == 0);
}

TEST_CASE("moves: inputs come in, gradients start at zero, only what is read later goes home") {
  Sequence s;
  const int x = s.Buffer("x", 16, Lifetime::kInput, false);
  const int w = s.Buffer("w", 16, Lifetime::kInput, true);
  const int f = s.Buffer("f", 16, Lifetime::kStep, false);
  const int g = s.Buffer("g", 16, Lifetime::kGradient, false);
  const int dw = s.Buffer("dw", 16, Lifetime::kOutput, true);
  const size_t forward = s.Op("forward"), backward = s.Op("backward"), last = s.Op("last");
  s.ops.Use(forward, x, true, false);
  s.ops.Use(forward, w, true, false);
  s.ops.Use(forward, f, false, true);
  s.ops.Use(backward, f, true, false);
  s.ops.Use(backward, w, true, false);
  s.ops.Use(backward, g, true, true);
  s.ops.Use(backward, dw, false, true);
  s.ops.Use(last, g, true, false);

  const std::vector<bool> none(5, false);
  auto moves = BufferMoves(s.ops, none);
  CHECK(moves[forward][0].before == Before::kCopyIn);   // x
  CHECK(moves[forward][2].before == Before::kNothing);  // f: written whole
  CHECK(moves[forward][2].copy_out);                    // read by backward
  CHECK(moves[backward][0].before == Before::kCopyIn);  // f back in
  CHECK(moves[backward][1].before == Before::kCopyIn);  // w again: not pinned
  CHECK(moves[backward][2].before == Before::kZero);    // g: first use
  CHECK(moves[backward][2].copy_out);                   // read by last
  CHECK(moves[backward][3].copy_out);                   // dw: read outside the step
  CHECK_FALSE(moves[last][0].copy_out);

  std::vector<bool> pinned(5, true);
  moves = BufferMoves(s.ops, pinned);
  CHECK(moves[forward][1].before == Before::kCopyIn);  // w: once a step
  CHECK(moves[backward][1].before == Before::kNothing);
  CHECK_FALSE(moves[forward][2].copy_out);  // f stays on the device
  CHECK(moves[backward][2].before == Before::kZero);
  CHECK_FALSE(moves[backward][2].copy_out);
  CHECK(moves[backward][3].copy_out);  // dw still goes home

  DeviceMemoryPlan plan;
  REQUIRE(PlanDeviceMemory(s.ops, 1 << 20, &plan).ok());
  CHECK(plan.bytes_to_device == 2 * 64);  // x and w
  CHECK(plan.bytes_to_host == 64);        // dw
}

}  // namespace
}  // namespace shoal
