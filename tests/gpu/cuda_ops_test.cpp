// GPU tests of the CUDA ops (lib/ops/cuda_ops.cpp, loaded from
// libshoal_cuda.so): each op's forward and backward on the GPU equal to the
// host's, the reference, within 1e-4 relative to the largest value, for
// both ways of writing a source's gradient (kSet and kAdd), at shapes of
// the MLP, the CNN and the convnets (strided, padded, odd sizes, pools
// rounding up, batch norm, LRN, concatenation, dropout).
// Exits 77 (ctest: skipped) on a machine without a GPU.
#define DOCTEST_CONFIG_IMPLEMENT
#include <cuda_runtime_api.h>
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

#include "device/cuda_device.h"
#include "ops/batch_norm.h"
#include "ops/convolution.h"
#include "ops/elementwise.h"
#include "ops/fully_connected.h"
#include "ops/gpu_ops.h"
#include "ops/lrn.h"
#include "ops/pooling.h"
#include "ops/softmax_loss.h"

namespace shoal {
namespace {

// GPU 0's ops, their workspace from a device of 1 GiB (made first: it outlives them).
GpuOps& Gpu() {
  static std::unique_ptr<Device> device = [] {
    std::unique_ptr<Device> d;
    const Status s = OpenCudaDevice(0, size_t{1} << 30, &d);
    REQUIRE_MESSAGE(s.ok(), s.message());
    return d;
  }();
  static std::unique_ptr<GpuOps> ops = [] {
    std::unique_ptr<GpuOps> o;
    const Status s = LoadCudaOps(0, &o);
    REQUIRE_MESSAGE(s.ok(), s.message());
    o->TakeWorkspaceFrom(device.get());
    return o;
  }();
  return *ops;
}

std::vector<float> Random(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// An output's starting values on the GPU: NaN, so that an op that leaves any
// of it unwritten fails the comparison.
std::vector<float> Unwritten(size_t n) { return std::vector<float>(n, std::nanf("")); }

// A host vector's copy in GPU memory, read back by Host().
class OnGpu {
 public:
  explicit OnGpu(const std::vector<float>& host) : n_(host.size()) {
    REQUIRE(cudaMalloc(reinterpret_cast<void**>(&p_), std::max<size_t>(n_, 1) * sizeof(float)) ==
            cudaSuccess);
    REQUIRE(cudaMemcpy(p_, host.data(), n_ * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
  }
  ~OnGpu() { cudaFree(p_); }
  float* get() { return p_; }
  std::vector<float> Host() const {
    std::vector<float> h(n_);
    REQUIRE(cudaMemcpy(h.data(), p_, n_ * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
    return h;
  }

 private:
  size_t n_;
  float* p_ = nullptr;
};

void CheckClose(const std::vector<float>& want, const std::vector<float>& got, const char* what) {
  REQUIRE(want.size() == got.size());
  float scale = 1e-6f, worst = 0.0f;
  size_t unwritten = 0;  // NaN: what the op left of Unwritten()
  for (float v : want) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < want.size(); ++i) {
    unwritten += std::isnan(got[i]);
    if (!std::isnan(got[i])) worst = std::max(worst, std::fabs(want[i] - got[i]));
  }
  INFO(what << ": max |host - gpu| " << worst << " against a largest value of " << scale << "; " << unwritten
            << " values not written");
  CHECK(unwritten == 0);
  CHECK(worst <= 1e-4f * scale);
}

// Runs `op` on the GPU with the GPU ops current, then checks their status.
void OnDevice(const std::function<void()>& op) {
  {
    ScopedGpuOps on(&Gpu());
    op();
  }
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  const Status s = Gpu().TakeStatus();
  REQUIRE_MESSAGE(s.ok(), s.message());
}

TEST_CASE("fully connected, forward and backward, set and added gradients") {
  for (auto [batch, in, out] : {std::tuple{32, 784, 256}, {7, 33, 10}, {1, 5, 3}}) {
    const auto x = Random(size_t(batch) * in, 1), w = Random(size_t(out) * in, 2), b = Random(out, 3),
               dy = Random(size_t(batch) * out, 4), dx0 = Random(size_t(batch) * in, 5);
    for (GradWrite write : {GradWrite::kSet, GradWrite::kAdd}) {
      std::vector<float> y(size_t(batch) * out), dx = dx0, dw(w.size()), db(out);
      FullyConnectedForward(batch, in, out, x.data(), w.data(), b.data(), y.data());
      FullyConnectedBackward(batch, in, out, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(),
                             write);
      OnGpu gx(x), gw(w), gb(b), gdy(dy), gy(Unwritten(y.size())), gdx(dx0), gdw(Unwritten(dw.size())),
          gdb(Unwritten(db.size()));
      OnDevice([&] {
        FullyConnectedForward(batch, in, out, gx.get(), gw.get(), gb.get(), gy.get());
        FullyConnectedBackward(batch, in, out, gx.get(), gw.get(), gdy.get(), gdx.get(), gdw.get(), gdb.get(),
                               write);
      });
      CheckClose(y, gy.Host(), "y");
      CheckClose(dx, gdx.Host(), "dx");
      CheckClose(dw, gdw.Host(), "dw");
      CheckClose(db, gdb.Host(), "db");
    }
  }
}

TEST_CASE("convolution, forward and backward, as im2col + sgemm computes it") {
  const ConvGeometry shapes[] = {{1, 28, 28, 32, 5, 1, 2}, {32, 14, 14, 64, 5, 1, 2}, {3, 11, 9, 5, 3, 2, 1}};
  for (const ConvGeometry& g : shapes) {
    const int batch = 4;
    const size_t in = size_t(batch) * g.channels * g.height * g.width;
    const size_t out = size_t(batch) * g.filters * g.out_height() * g.out_width();
    const auto x = Random(in, 11), w = Random(size_t(g.filters) * g.col_rows(), 12, 0.2f),
               b = Random(g.filters, 13), dy = Random(out, 14), dx0 = Random(in, 15);
    for (GradWrite write : {GradWrite::kSet, GradWrite::kAdd}) {
      std::vector<float> y(out), dx = dx0, dw(w.size()), db(g.filters), scratch;
      ConvolutionForward(g, batch, x.data(), w.data(), b.data(), y.data(), &scratch);
      ConvolutionBackward(g, batch, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(), write,
                          &scratch);
      OnGpu gx(x), gw(w), gb(b), gdy(dy), gy(Unwritten(y.size())), gdx(dx0), gdw(Unwritten(dw.size())),
          gdb(Unwritten(db.size()));
      OnDevice([&] {
        ConvolutionForward(g, batch, gx.get(), gw.get(), gb.get(), gy.get(), &scratch);
        ConvolutionBackward(g, batch, gx.get(), gw.get(), gdy.get(), gdx.get(), gdw.get(), gdb.get(), write,
                            &scratch);
      });
      CheckClose(y, gy.Host(), "y");
      CheckClose(dx, gdx.Host(), "dx");
      CheckClose(dw, gdw.Host(), "dw");
      CheckClose(db, gdb.Host(), "db");
    }
  }
}

TEST_CASE("a convolution without a bias: the host's with a zero one") {
  const ConvGeometry g{16, 8, 8, 32, 3, 1, 1};
  const int batch = 4;
  const size_t in = size_t(batch) * g.channels * g.height * g.width;
  const size_t out = size_t(batch) * g.filters * g.out_height() * g.out_width();
  const auto x = Random(in, 61), w = Random(size_t(g.filters) * g.col_rows(), 62, 0.2f), dy = Random(out, 63);
  const std::vector<float> zero(g.filters, 0.0f);
  std::vector<float> y(out), dx(in), dw(w.size()), db(g.filters), scratch;
  ConvolutionForward(g, batch, x.data(), w.data(), zero.data(), y.data(), &scratch);
  ConvolutionBackward(g, batch, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(),
                      GradWrite::kSet, &scratch);
  OnGpu gx(x), gw(w), gdy(dy), gy(Unwritten(out)), gdx(Unwritten(in)), gdw(Unwritten(dw.size()));
  OnDevice([&] {
    ConvolutionForward(g, batch, gx.get(), gw.get(), nullptr, gy.get(), &scratch);
    ConvolutionBackward(g, batch, gx.get(), gw.get(), gdy.get(), gdx.get(), gdw.get(), nullptr,
                        GradWrite::kSet, &scratch);
  });
  CheckClose(y, gy.Host(), "y");
  CheckClose(dx, gdx.Host(), "dx");
  CheckClose(dw, gdw.Host(), "dw");
}

PoolGeometry CeilMode(PoolGeometry g) {
  g.ceil_mode = true;
  return g;
}

TEST_CASE("max and average pooling, forward and backward, windows past the padded input too") {
  const PoolGeometry shapes[] = {
      {32, 28, 28, 2, 2, 2},
      {5, 9, 7, 3, 3, 2},
      {4, 9, 7, 3, 3, 1, 1, PoolKind::kAvg},
      // SINGA's and GoogLeNet's pools, rounding up: the last windows overhang (our kernels).
      CeilMode({4, 32, 32, 3, 3, 2}),
      CeilMode({3, 16, 16, 3, 3, 2, 0, PoolKind::kAvg}),
      CeilMode({5, 10, 8, 3, 3, 2, 1, PoolKind::kAvg}),
      CeilMode({4, 10, 9, 3, 2, 2, 1}),
      // Global average pooling, as ResNet's.
      {64, 8, 8, 8, 8, 1, 0, PoolKind::kAvg}};
  int overhanging = 0;
  for (const PoolGeometry& g : shapes) {
    overhanging += g.Overhangs();
    const int batch = 3;
    const size_t in = size_t(batch) * g.channels * g.height * g.width;
    const size_t out = size_t(batch) * g.channels * g.out_height() * g.out_width();
    const auto x = Random(in, 21), dy = Random(out, 22),
               dx0 = Random(in, 23);  // no ties: one winner a window
    for (GradWrite write : {GradWrite::kSet, GradWrite::kAdd}) {
      std::vector<float> y(out), dx = dx0;
      std::vector<int32_t> argmax;
      PoolForward(g, batch, x.data(), y.data(), &argmax);
      PoolBackward(g, batch, x.data(), y.data(), dy.data(), argmax, dx.data(), write);
      OnGpu gx(x), gy(Unwritten(y.size())), gdy(dy), gdx(dx0);
      OnDevice([&] {
        PoolForward(g, batch, gx.get(), gy.get(), &argmax);
        PoolBackward(g, batch, gx.get(), gy.get(), gdy.get(), argmax, gdx.get(), write);
      });
      CheckClose(y, gy.Host(), "y");
      CheckClose(dx, gdx.Host(), "dx");
    }
  }
  CHECK(overhanging == 4);
}

TEST_CASE(
    "batch norm: training, its backward pass and running changes, evaluation; per channel and feature") {
  struct Case {
    BatchNormGeometry g;
    int batch;
  };
  // An image's channels, a vector's features, and odd sizes.
  for (const Case& k : {Case{{16, 64}, 5}, Case{{10, 1}, 7}, Case{{3, 35, 1e-3f}, 2}}) {
    const BatchNormGeometry& g = k.g;
    const size_t n = size_t(k.batch) * g.channels * g.plane, c = g.channels;
    auto positive = [](std::vector<float> v) {
      for (float& f : v) f = 1.0f + 0.5f * f;
      return v;
    };
    const auto x = Random(n, 71, 3.0f), dy = Random(n, 72), dx0 = Random(n, 73),
               gamma = positive(Random(c, 74)), beta = Random(c, 75), running_mean = Random(c, 76),
               running_var = positive(Random(c, 77));
    const float momentum = 0.1f;
    for (GradWrite write : {GradWrite::kSet, GradWrite::kAdd}) {
      for (bool want_dx : {true, false}) {
        INFO("channels " << g.channels << ", plane " << g.plane << ", dx "
                         << (want_dx ? "wanted" : "not wanted"));
        std::vector<float> y(n), dx = dx0, dgamma(c), dbeta(c), mean_change(c), var_change(c), eval(n), mean,
                                 inv_std, var;
        BatchNormTrainForward(g, k.batch, x.data(), gamma.data(), beta.data(), y.data(), &mean, &inv_std,
                              &var);
        BatchNormBackward(g, k.batch, x.data(), dy.data(), gamma.data(), mean, inv_std,
                          want_dx ? dx.data() : nullptr, dgamma.data(), dbeta.data(), write);
        BatchNormRunningChanges(g, momentum, running_mean.data(), running_var.data(), mean, var,
                                mean_change.data(), var_change.data());
        BatchNormInferenceForward(g, k.batch, x.data(), gamma.data(), beta.data(), running_mean.data(),
                                  running_var.data(), eval.data());
        OnGpu gx(x), gdy(dy), gdx(dx0), ggamma(gamma), gbeta(beta), grm(running_mean), grv(running_var),
            gy(Unwritten(n)), gdgamma(Unwritten(c)), gdbeta(Unwritten(c)), gmc(Unwritten(c)),
            gvc(Unwritten(c)), geval(Unwritten(n));
        std::vector<float> gpu_mean, gpu_inv_std, gpu_var;  // the key of the GPU's own
        OnDevice([&] {
          BatchNormTrainForward(g, k.batch, gx.get(), ggamma.get(), gbeta.get(), gy.get(), &gpu_mean,
                                &gpu_inv_std, &gpu_var);
          BatchNormBackward(g, k.batch, gx.get(), gdy.get(), ggamma.get(), gpu_mean, gpu_inv_std,
                            want_dx ? gdx.get() : nullptr, gdgamma.get(), gdbeta.get(), write);
          BatchNormRunningChanges(g, momentum, grm.get(), grv.get(), gpu_mean, gpu_var, gmc.get(), gvc.get());
          BatchNormInferenceForward(g, k.batch, gx.get(), ggamma.get(), gbeta.get(), grm.get(), grv.get(),
                                    geval.get());
        });
        CheckClose(y, gy.Host(), "y");
        CheckClose(dx, gdx.Host(), "dx");
        CheckClose(dgamma, gdgamma.Host(), "dgamma");
        CheckClose(dbeta, gdbeta.Host(), "dbeta");
        CheckClose(mean_change, gmc.Host(), "the running mean's change");
        CheckClose(var_change, gvc.Host(), "the running variance's change");
        CheckClose(eval, geval.Host(), "evaluation's y");
      }
    }
  }
}

TEST_CASE("batch norm over one value a channel is refused on the GPU, saying why") {
  const BatchNormGeometry g{4, 1};
  OnGpu x(Random(4, 81)), gamma(Random(4, 82)), beta(Random(4, 83)), y(Unwritten(4));
  std::vector<float> mean, inv_std, var;
  {
    ScopedGpuOps on(&Gpu());
    BatchNormTrainForward(g, 1, x.get(), gamma.get(), beta.get(), y.get(), &mean, &inv_std, &var);
  }
  const Status s = Gpu().TakeStatus();
  CHECK_FALSE(s.ok());
  CHECK(s.message().find("one value a channel") != std::string::npos);
}

TEST_CASE("LRN across channels, forward and backward, at the window's edges too") {
  // AlexNet's size with a strong alpha (its effect shows), and a window wider than the channels.
  for (const LrnGeometry& g :
       {LrnGeometry{16, 49, 5, 0.5f, 0.75f, 2.0f}, LrnGeometry{7, 6, 3, 1.0f, 0.5f, 1.0f},
        LrnGeometry{3, 10, 7, 2.0f, 1.5f, 0.5f}}) {
    REQUIRE(LrnHasGpuForm(g));
    const int batch = 3;
    const size_t n = size_t(batch) * g.channels * g.plane;
    const auto x = Random(n, 91, 2.0f), dy = Random(n, 92), dx0 = Random(n, 93);
    for (GradWrite write : {GradWrite::kSet, GradWrite::kAdd}) {
      INFO("size " << g.size << " over " << g.channels << " channels");
      std::vector<float> y(n), dx = dx0, scale;
      LrnForward(g, batch, x.data(), y.data(), &scale);
      LrnBackward(g, batch, x.data(), y.data(), dy.data(), scale, dx.data(), write);
      OnGpu gx(x), gy(Unwritten(n)), gdy(dy), gdx(dx0);
      std::vector<float> unused;
      OnDevice([&] {
        LrnForward(g, batch, gx.get(), gy.get(), &unused);
        LrnBackward(g, batch, gx.get(), gy.get(), gdy.get(), unused, gdx.get(), write);
      });
      CheckClose(y, gy.Host(), "y");
      CheckClose(dx, gdx.Host(), "dx");
    }
  }
}

TEST_CASE("relu, sigmoid and identity, forward and backward") {
  const size_t n = 100003;
  const auto x = Random(n, 31, 4.0f), dy = Random(n, 32), dx0 = Random(n, 33);
  using Forward = void (*)(size_t, const float*, float*);
  using Backward = void (*)(size_t, const float*, const float*, float*, GradWrite);
  const std::tuple<const char*, Forward, Backward> activations[] = {
      {"relu", ReluForward, ReluBackward}, {"sigmoid", SigmoidForward, SigmoidBackward}};
  for (auto [name, forward, backward] : activations)
    for (GradWrite write : {GradWrite::kSet, GradWrite::kAdd}) {
      INFO(name);
      std::vector<float> y(n), dx = dx0;
      forward(n, x.data(), y.data());
      backward(n, y.data(), dy.data(), dx.data(), write);
      OnGpu gx(x), gy(Unwritten(y.size())), gdy(dy), gdx(dx0);
      OnDevice([&] {
        forward(n, gx.get(), gy.get());
        backward(n, gy.get(), gdy.get(), gdx.get(), write);
      });
      CheckClose(y, gy.Host(), "y");
      CheckClose(dx, gdx.Host(), "dx");
    }
  for (GradWrite write : {GradWrite::kSet, GradWrite::kAdd}) {
    std::vector<float> y(n), dx = dx0;
    IdentityForward(n, x.data(), y.data());
    IdentityBackward(n, dy.data(), dx.data(), write);
    OnGpu gx(x), gy(Unwritten(y.size())), gdy(dy), gdx(dx0);
    OnDevice([&] {
      IdentityForward(n, gx.get(), gy.get());
      IdentityBackward(n, gdy.get(), gdx.get(), write);
    });
    CHECK(gy.Host() == y);
    CHECK(gdx.Host() == dx);
  }
}

TEST_CASE("rows copied and added between strides (a concatenation's parts), and dropout's mask") {
  const int rows = 9;
  const size_t cols = 1000, x_stride = 1300, y_stride = 2500;
  const auto x = Random(rows * x_stride, 101), y0 = Random(rows * y_stride, 102);
  for (GradWrite write : {GradWrite::kSet, GradWrite::kAdd}) {
    std::vector<float> y = y0;
    CopyRows(rows, cols, x.data(), x_stride, y.data(), y_stride, write);
    OnGpu gx(x), gy(y0);
    OnDevice([&] { CopyRows(rows, cols, gx.get(), x_stride, gy.get(), y_stride, write); });
    CHECK(gy.Host() == y);
  }
  const size_t n = 50001;
  const auto xd = Random(n, 105), dy = Random(n, 103), dx0 = Random(n, 104);
  const uint64_t key = 0x5eed5eed12345678ull;
  for (GradWrite write : {GradWrite::kSet, GradWrite::kAdd}) {
    std::vector<float> y(n), dx = dx0;
    DropoutForward(n, 0.3f, key, xd.data(), y.data());
    DropoutBackward(n, 0.3f, key, dy.data(), dx.data(), write);
    OnGpu gx(xd), gy(Unwritten(n)), gdy(dy), gdx(dx0);
    OnDevice([&] {
      DropoutForward(n, 0.3f, key, gx.get(), gy.get());
      DropoutBackward(n, 0.3f, key, gdy.get(), gdx.get(), write);
    });
    // The host's mask, bit for bit: the same draws from the key.
    CHECK(gy.Host() == y);
    CHECK(gdx.Host() == dx);
  }
}

TEST_CASE("softmax cross-entropy: probabilities, loss, hits and the gradient; unnamed labels add nothing") {
  const int batch = 37, classes = 10;
  const auto logits = Random(size_t(batch) * classes, 41, 3.0f), dl0 = Random(size_t(batch) * classes, 42);
  std::vector<int32_t> labels(batch);
  for (int r = 0; r < batch; ++r) labels[r] = r % 13 == 12 ? -1 : (r * 7) % classes;
  std::vector<float> prob(logits.size()), dl = dl0;
  int correct = -1, gpu_correct = -1;
  const float loss =
      SoftmaxCrossEntropyForward(batch, classes, logits.data(), labels.data(), prob.data(), &correct);
  SoftmaxCrossEntropyBackward(batch, classes, prob.data(), labels.data(), dl.data());
  OnGpu glogits(logits), gprob(Unwritten(prob.size())), gdl(dl0);
  float gpu_loss = 0.0f;
  OnDevice([&] {
    gpu_loss =
        SoftmaxCrossEntropyForward(batch, classes, glogits.get(), labels.data(), gprob.get(), &gpu_correct);
    SoftmaxCrossEntropyBackward(batch, classes, gprob.get(), labels.data(), gdl.get());
  });
  CHECK(gpu_loss == doctest::Approx(loss).epsilon(1e-5));
  CHECK(gpu_correct == correct);
  CheckClose(prob, gprob.Host(), "prob");
  CheckClose(dl, gdl.Host(), "dlogits");
}

TEST_CASE("the workspace comes from the device's budget: with no room, a convolution needs none or says so") {
  std::unique_ptr<Device> device;
  REQUIRE(OpenCudaDevice(0, 0, &device).ok());
  std::unique_ptr<GpuOps> ops;
  REQUIRE(LoadCudaOps(0, &ops).ok());
  ops->TakeWorkspaceFrom(device.get());
  const ConvGeometry g{32, 14, 14, 64, 5, 1, 2};
  const int batch = 4;
  const size_t in = size_t(batch) * g.channels * g.height * g.width;
  const size_t out = size_t(batch) * g.filters * g.out_height() * g.out_width();
  const auto x = Random(in, 51), w = Random(size_t(g.filters) * g.col_rows(), 52, 0.2f),
             b = Random(g.filters, 53), dy = Random(out, 54);
  std::vector<float> y(out), dx(in), dw(w.size()), db(g.filters), scratch;
  ConvolutionForward(g, batch, x.data(), w.data(), b.data(), y.data(), &scratch);
  ConvolutionBackward(g, batch, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(),
                      GradWrite::kSet, &scratch);
  OnGpu gx(x), gw(w), gb(b), gdy(dy), gy(Unwritten(out)), gdx(Unwritten(in)), gdw(Unwritten(dw.size())),
      gdb(Unwritten(db.size()));
  {
    ScopedGpuOps on(ops.get());
    ConvolutionForward(g, batch, gx.get(), gw.get(), gb.get(), gy.get(), &scratch);
    ConvolutionBackward(g, batch, gx.get(), gw.get(), gdy.get(), gdx.get(), gdw.get(), gdb.get(),
                        GradWrite::kSet, &scratch);
  }
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  const Status s = ops->TakeStatus();
  CHECK(device->peak_bytes() == 0);
  if (s.ok()) {
    std::printf("cuda_ops_test: with no workspace, cuDNN's workspace-free algorithms ran\n");
    CheckClose(y, gy.Host(), "y");
    CheckClose(dx, gdx.Host(), "dx");
    CheckClose(dw, gdw.Host(), "dw");
  } else {
    INFO(s.message());
    CHECK(s.message().find("within the 0 bytes of workspace the device's budget leaves") !=
          std::string::npos);
  }
}

TEST_CASE("a failing op is reported by TakeStatus, naming the GPU, then the status is clear") {
  // A convolution cuDNN cannot describe (no filters) fails in its descriptors.
  const ConvGeometry g{1, 4, 4, 0, 3, 1, 0};
  std::vector<float> scratch;
  {
    ScopedGpuOps on(&Gpu());
    ConvolutionForward(g, 1, nullptr, nullptr, nullptr, nullptr, &scratch);
  }
  const Status s = Gpu().TakeStatus();
  CHECK_FALSE(s.ok());
  CHECK(s.message().find("cuda:0") != std::string::npos);
  CHECK(Gpu().TakeStatus().ok());
}

}  // namespace
}  // namespace shoal

int main(int argc, char** argv) {
  if (shoal::CudaDeviceCount() == 0) {
    std::printf("cuda_ops_test: skipped: no GPU on this machine\n");
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
