// One convolution layer's training step (forward, then the weight, bias and
// data gradients) by each kernel this build has: im2col + sgemm, oneDNN's
// direct convolution and Winograd's, where each takes the geometry; the
// kernels alternate, `repeats` times each, so that a noisy machine weighs on
// all alike. Prints one JSON line per geometry: each kernel's median ms.
//   convolution_speed [THREADS] [REPEATS] [BATCH]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "args.h"
#include "core/median.h"
#include "ops/blas.h"
#include "ops/convolution.h"
#include "ops/onednn_convolution.h"
#include "ops/winograd_convolution.h"

using namespace shoal;

namespace {

struct Case {
  const char* name;
  ConvGeometry g;
};

}  // namespace

int main(int argc, char** argv) {
  const int threads = bench::IntArg(argc, argv, 1, "THREADS", 1, 1, 1024);
  const int repeats = bench::IntArg(argc, argv, 2, "REPEATS", 5, 1, 1000000);
  const int batch = bench::IntArg(argc, argv, 3, "BATCH", 64, 1, 65536);
  SetComputeThreads(threads);
  const Case cases[] = {
      {"fashion-cnn conv2: 32 -> 64, 5x5 pad 2, 14x14", {32, 14, 14, 64, 5, 1, 2}},
      {"16 -> 32, 5x5 pad 2, 28x28", {16, 28, 28, 32, 5, 1, 2}},
      {"8 -> 16, 5x5 pad 2, 28x28", {8, 28, 28, 16, 5, 1, 2}},
      {"64 -> 64, 3x3 pad 1, 28x28", {64, 28, 28, 64, 3, 1, 1}},
      {"32 -> 32, 3x3 pad 1, 28x28", {32, 28, 28, 32, 3, 1, 1}},
      {"16 -> 16, 3x3 pad 1, 28x28", {16, 28, 28, 16, 3, 1, 1}},
      {"resnet20 stage 1: 16 -> 16, 3x3 pad 1, 32x32", {16, 32, 32, 16, 3, 1, 1}},
      {"resnet20 stage 2: 32 -> 32, 3x3 pad 1, 16x16", {32, 16, 16, 32, 3, 1, 1}},
      {"resnet20 stage 3: 64 -> 64, 3x3 pad 1, 8x8", {64, 8, 8, 64, 3, 1, 1}},
      {"alexnet-67 conv2: 96 -> 256, 5x5 pad 2, 7x7", {96, 7, 7, 256, 5, 1, 2}},
      {"alexnet-67 conv4: 384 -> 384, 3x3 pad 1, 3x3", {384, 3, 3, 384, 3, 1, 1}},
      {"googlenet-64 conv2: 64 -> 192, 3x3 pad 1, 16x16", {64, 16, 16, 192, 3, 1, 1}},
      {"googlenet-64 i3b_3x3: 128 -> 192, 3x3 pad 1, 8x8", {128, 8, 8, 192, 3, 1, 1}},
      {"googlenet-64 i4a_3x3: 96 -> 208, 3x3 pad 1, 4x4", {96, 4, 4, 208, 3, 1, 1}},
      {"googlenet-64 i5a_3x3: 160 -> 320, 3x3 pad 1, 2x2", {160, 2, 2, 320, 3, 1, 1}},
  };
  for (const Case& c : cases) {
    const ConvGeometry& g = c.g;
    std::vector<float> x(static_cast<size_t>(batch) * g.channels * g.height * g.width, 0.5f),
        w(static_cast<size_t>(g.filters) * g.col_rows(), 0.01f), b(g.filters, 0.0f),
        y(static_cast<size_t>(batch) * g.filters * g.col_cols()), dw(w.size()), db(b.size()), dx(x.size()),
        scratch;
    std::unique_ptr<FastConvolution> onednn = NewOneDnnConvolution(g), winograd = NewWinogradConvolution(g);
    std::map<std::string, std::function<void()>> kernels;
    kernels["im2col"] = [&] {
      ConvolutionForward(g, batch, x.data(), w.data(), b.data(), y.data(), &scratch);
      ConvolutionBackward(g, batch, x.data(), w.data(), y.data(), dx.data(), dw.data(), db.data(),
                          GradWrite::kSet, &scratch);
    };
    for (auto* fast : {&onednn, &winograd}) {
      if (!*fast) continue;
      kernels[fast == &onednn ? "onednn" : "winograd"] = [&, fast] {
        if (!(*fast)->Forward(batch, x.data(), w.data(), b.data(), y.data())) std::abort();
        (*fast)->Backward(batch, x.data(), w.data(), y.data(), dx.data(), GradWrite::kSet, dw.data(),
                          db.data());
      };
    }
    std::map<std::string, std::vector<double>> ms;
    for (int r = 0; r <= repeats; ++r)
      for (auto& [name, run] : kernels) {
        const auto start = std::chrono::steady_clock::now();
        run();
        const double t =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        if (r > 0) ms[name].push_back(t);  // the first round warms up (primitives, scratch)
      }
    nlohmann::json line = {{"case", c.name}, {"batch", batch}, {"threads", threads}, {"repeats", repeats}};
    for (auto& [name, times] : ms) line["ms"][name] = Median(times);
    std::printf("%s\n", line.dump().c_str());
  }
}
