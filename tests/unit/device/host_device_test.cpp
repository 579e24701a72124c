// Tests for lib/device/host_device.cpp and the Device base: the budget is
// held on every allocation, copies run in the order queued, marks wait.
#include "device/host_device.h"

#include <doctest/doctest.h>

#include <vector>

namespace shoal {
namespace {

TEST_CASE("allocations past the budget are refused, naming it; peak and frees are counted") {
  HostDevice device(1000);
  void *a = nullptr, *b = nullptr, *c = nullptr;
  REQUIRE(device.Allocate(600, &a).ok());  // 640 with alignment
  CHECK(device.bytes_in_use() == 640);
  const Status refused = device.Allocate(400, &b);
  CHECK_FALSE(refused.ok());
  CHECK(refused.message().find("budget of") != std::string::npos);
  CHECK(refused.message().find("in use") != std::string::npos);
  REQUIRE(device.Allocate(300, &b).ok());
  CHECK(device.peak_bytes() == 960);
  device.Free(a, 600);
  REQUIRE(device.Allocate(600, &c).ok());
  CHECK(device.peak_bytes() == 960);
  device.Free(b, 300);
  device.Free(c, 600);
  CHECK(device.bytes_in_use() == 0);
}

TEST_CASE("copies and zeroing run in the order queued, and count their bytes") {
  HostDevice device(1 << 20);
  void* memory = nullptr;
  REQUIRE(device.Allocate(4096, &memory).ok());
  std::vector<float> in(1024), out(1024, -1.0f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  device.CopyToDevice(memory, in.data(), 4096);
  device.CopyToHost(out.data(), memory, 4096);
  device.Zero(memory, 2048);
  std::vector<float> zeroed(1024, -1.0f);
  device.CopyToHost(zeroed.data(), memory, 4096);
  REQUIRE(device.WaitFor(device.Mark(), 5000).ok());
  CHECK(out == in);
  CHECK(zeroed[511] == 0.0f);
  CHECK(zeroed[512] == 512.0f);
  CHECK(device.bytes_to_device() == 4096);
  CHECK(device.bytes_to_host() == 8192);
  device.Free(memory, 4096);
}

}  // namespace
}  // namespace shoal
