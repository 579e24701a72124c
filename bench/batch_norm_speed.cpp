// One batch norm layer's training pass (forward with its ReLU fused, then
// backward) for the geometries of ResNet-20's three stages, each call on
// arrays just evicted from the caches, as a net's step meets them. Prints
// one JSON line per geometry: the median ms of each pass over `repeats`.
//   batch_norm_speed [THREADS] [REPEATS] [BATCH]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <vector>

#include "args.h"
#include "core/median.h"
#include "ops/batch_norm.h"
#include "ops/blas.h"

using namespace shoal;

namespace {

using Clock = std::chrono::steady_clock;

// Writes a buffer larger than the last-level cache, so the next pass reads memory.
void Evict() {
  static std::vector<float> junk(32 << 20);
  for (float& v : junk) v += 1.0f;
}

template <typename Fn>
double TimeMs(const Fn& fn) {
  Evict();
  const auto start = Clock::now();
  fn();
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = bench::IntArg(argc, argv, 1, "THREADS", 1, 1, 1024);
  const int repeats = bench::IntArg(argc, argv, 2, "REPEATS", 15, 1, 1000000);
  const int batch = bench::IntArg(argc, argv, 3, "BATCH", 128, 1, 65536);
  SetComputeThreads(threads);
  struct Case {
    const char* name;
    int channels, side;
  };
  for (const Case& c :
       {Case{"resnet20 stage 1: 16 x 32x32", 16, 32}, Case{"resnet20 stage 2: 32 x 16x16", 32, 16},
        Case{"resnet20 stage 3: 64 x 8x8", 64, 8}}) {
    const BatchNormGeometry g{c.channels, c.side * c.side};
    const size_t n = static_cast<size_t>(batch) * g.channels * g.plane;
    std::vector<float> x(n), dy(n), y(n), dx(n), gamma(g.channels, 1.0f), beta(g.channels, 0.1f),
        dgamma(g.channels), dbeta(g.channels), mean, inv_std, var;
    for (size_t i = 0; i < n; ++i) {  // values of both signs, so that the ReLU's mask cuts some
      x[i] = static_cast<float>((i * 2654435761u) % 1000) / 500.0f - 1.0f;
      dy[i] = static_cast<float>((i * 40503u) % 1000) / 1000.0f - 0.5f;
    }
    std::vector<double> forward, backward;
    for (int r = 0; r < repeats; ++r) {
      forward.push_back(TimeMs([&] {
        BatchNormTrainForward(g, batch, x.data(), gamma.data(), beta.data(), y.data(), &mean, &inv_std, &var,
                              nullptr, BatchNormActivation::kRelu);
      }));
      backward.push_back(TimeMs([&] {
        BatchNormBackward(g, batch, x.data(), dy.data(), gamma.data(), mean, inv_std, dx.data(),
                          dgamma.data(), dbeta.data(), GradWrite::kSet, nullptr, BatchNormActivation::kRelu,
                          beta.data());
      }));
    }
    std::printf("%s\n", nlohmann::json({{"case", c.name},
                                        {"batch", batch},
                                        {"threads", threads},
                                        {"forward_ms", Median(forward)},
                                        {"backward_ms", Median(backward)}})
                            .dump()
                            .c_str());
  }
  return 0;
}
