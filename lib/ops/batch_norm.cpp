#include "ops/batch_norm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/gpu_ops.h"
#include "ops/parallel.h"

namespace shoal {
namespace {

// A batch's planes: the values of channel c of record r are plane r·C + c,
// `plane` values long. The passes below sweep planes in that order, which is
// the order they lie in memory, so the hardware's prefetchers run ahead of
// them; a channel's planes, a record apart, would start each plane cold.
struct Planes {
  int channels, plane;
  size_t count;  // batch · channels
  int channel(size_t i) const { return static_cast<int>(i % channels); }
  size_t at(size_t i) const { return i * plane; }
  // Asks for plane i + 2 (short of `end`) of each array. The prefetchers
  // alone lag the backward pass's sweeps of two arrays of short planes.
  void Prefetch(size_t i, size_t end, const float* a, const float* b = nullptr) const {
    const size_t ahead = i + 2;
    if (ahead >= end) return;
    for (size_t p = 0; p < static_cast<size_t>(plane); p += 16) {
      __builtin_prefetch(a + at(ahead) + p);
      if (b) __builtin_prefetch(b + at(ahead) + p);
    }
  }
};

// A fused ReLU's mask over a channel: a value of dy counts where the forward
// pass's ŷ = x·scale + shift, computed again as it computed it, is positive.
struct ReluMask {
  bool on = false;
  float scale = 0.0f, shift = 0.0f;
};

// What the input gradient takes of a channel: dx = k·(dy − mean_dy − x̂·mean_dy_xhat), x̂ = (x − m)·inv.
struct ChannelGrad {
  float m, inv, k, mean_dy, mean_dy_xhat;
  ReluMask mask;
};

// Runs fn(begin, end) over ranges of the planes, split over the compute
// threads (in slices that ParallelFor's int counts).
template <typename Fn>
void ForPlanes(const Planes& planes, const Fn& fn) {
  constexpr size_t kSlice = size_t{1} << 30;
  for (size_t first = 0; first < planes.count; first += kSlice) {
    const int n = static_cast<int>(std::min(kSlice, planes.count - first));
    ParallelFor(n, [&](int, int begin, int end) { fn(first + begin, first + end); });
  }
}

// A channel's sum: its planes' sums added in record order, whatever the
// threads. That order makes it the bits one sweep of the channel gives.
double ChannelTotal(const std::vector<double>& per_plane, int channels, int c) {
  double total = 0.0;
  for (size_t i = c; i < per_plane.size(); i += channels) total += per_plane[i];
  return total;
}

// Σ term(p) over a plane's n values, in double, as 32 interleaved partial
// sums added in a fixed order. One running sum would wait on each addition;
// 32 fill four AVX-512 registers (eight AVX2 ones), so several additions are
// in flight at once. The result never depends on timing. Inlined into each
// of a kernel's clones below, to be compiled for its instructions.
template <typename Term>
[[gnu::always_inline]] inline double PlaneSum(int n, const Term& term) {
  double part[32] = {};
  int p = 0;
  for (; p + 32 <= n; p += 32)
    for (int j = 0; j < 32; ++j) part[j] += term(p + j);
  for (int j = 0; p + j < n; ++j) part[j] += term(p + j);  // the tail, spread over the parts too
  for (int width = 16; width >= 1; width /= 2)
    for (int j = 0; j < width; ++j) part[j] += part[j + width];
  return part[0];
}

// The kernels below sweep planes [begin, end): they are compiled for AVX-512
// and AVX2 as well, chosen at load by the CPU (the build targets plain
// x86-64). This file compiles without fused multiply-adds (CMakeLists.txt),
// so each clone computes the same bits.
#define SHOAL_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

SHOAL_VECTOR_CLONES void PlaneSums(const float* x, Planes planes, size_t begin, size_t end, double* sums) {
  for (size_t i = begin; i < end; ++i) {
    const float* in = x + planes.at(i);
    sums[i] = PlaneSum(planes.plane, [&](int p) { return static_cast<double>(in[p]); });
  }
}

// Σ (x − mean)² of each plane, its channel's mean taken.
SHOAL_VECTOR_CLONES void PlaneSquares(const float* x, Planes planes, size_t begin, size_t end,
                                      const double* mean, double* squares) {
  for (size_t i = begin; i < end; ++i) {
    const float* in = x + planes.at(i);
    const double m = mean[planes.channel(i)];
    squares[i] = PlaneSum(planes.plane, [&](int p) {
      const double d = in[p] - m;
      return d * d;
    });
  }
}

// y = x·scale + shift of each plane's channel, or its ReLU (as ReluForward computes it).
SHOAL_VECTOR_CLONES void ScaleShift(const float* x, Planes planes, size_t begin, size_t end,
                                    const float* scale, const float* shift, BatchNormActivation activation,
                                    float* y) {
  for (size_t i = begin; i < end; ++i) {
    const float* in = x + planes.at(i);
    float* out = y + planes.at(i);
    const float a = scale[planes.channel(i)], b = shift[planes.channel(i)];
    if (activation == BatchNormActivation::kRelu) {
      for (int p = 0; p < planes.plane; ++p) {
        const float v = in[p] * a + b;
        out[p] = v > 0.0f ? v : 0.0f;
      }
    } else {
      for (int p = 0; p < planes.plane; ++p) out[p] = in[p] * a + b;
    }
  }
}

// Each plane's sums of dy and dy·x̂. Two sweeps of a plane, each of one
// sum, run faster than one of both.
SHOAL_VECTOR_CLONES void PlaneGradSums(const float* x, const float* dy, Planes planes, size_t begin,
                                       size_t end, const ChannelGrad* channel, double* sum_dy,
                                       double* sum_dy_xhat) {
  thread_local std::vector<float> masked;
  masked.resize(planes.plane);
  for (size_t i = begin; i < end; ++i) {
    const ChannelGrad& c = channel[planes.channel(i)];
    const float* xs = x + planes.at(i);
    const float* dys = dy + planes.at(i);
    planes.Prefetch(i, end, x, dy);
    if (c.mask.on) {
      // ReluBackward's values, as the batch norm would have read them, made
      // first: the sums over a mask do not run as vector loops.
      float* __restrict d = masked.data();
      for (int p = 0; p < planes.plane; ++p) {
        const float v = dys[p];  // loaded whatever the mask says, as ReluBackward does
        d[p] = xs[p] * c.mask.scale + c.mask.shift > 0.0f ? v : 0.0f;
      }
      dys = d;
    }
    sum_dy[i] = PlaneSum(planes.plane, [&](int p) { return static_cast<double>(dys[p]); });
    sum_dy_xhat[i] =
        PlaneSum(planes.plane, [&](int p) { return static_cast<double>(dys[p]) * ((xs[p] - c.m) * c.inv); });
  }
}

// dx = k·(dy − mean_dy − x̂·mean_dy_xhat) of each plane's channel.
SHOAL_VECTOR_CLONES void InputGrad(const float* x, const float* dy, Planes planes, size_t begin, size_t end,
                                   const ChannelGrad* channel, float* dx, GradWrite write) {
  // WriteGrad's loops, written out: a template it instantiates would not take this clone's instructions.
  for (size_t i = begin; i < end; ++i) {
    const ChannelGrad& c = channel[planes.channel(i)];
    const float m = c.m, inv = c.inv, k = c.k, mean_dy = c.mean_dy, mean_dy_xhat = c.mean_dy_xhat;
    const float* xs = x + planes.at(i);
    const float* dys = dy + planes.at(i);
    float* __restrict out = dx + planes.at(i);
    planes.Prefetch(i, end, x, dy);
    if (c.mask.on) {
      const auto d = [&](int p) {
        const float v = dys[p];  // loaded whatever the mask says: the loop stays a vector one (ReluBackward)
        return xs[p] * c.mask.scale + c.mask.shift > 0.0f ? v : 0.0f;
      };
      if (write == GradWrite::kAdd)
        for (int p = 0; p < planes.plane; ++p)
          out[p] += k * (d(p) - mean_dy - (xs[p] - m) * inv * mean_dy_xhat);
      else
        for (int p = 0; p < planes.plane; ++p)
          out[p] = k * (d(p) - mean_dy - (xs[p] - m) * inv * mean_dy_xhat);
    } else if (write == GradWrite::kAdd)
      for (int p = 0; p < planes.plane; ++p)
        out[p] += k * (dys[p] - mean_dy - (xs[p] - m) * inv * mean_dy_xhat);
    else
      for (int p = 0; p < planes.plane; ++p)
        out[p] = k * (dys[p] - mean_dy - (xs[p] - m) * inv * mean_dy_xhat);
  }
}

#undef SHOAL_VECTOR_CLONES

// The mask of channel c's fused ReLU: its scale and shift as the forward pass computes them.
ReluMask MaskOf(BatchNormActivation activation, int c, const float* gamma, const float* beta,
                const std::vector<float>& mean, const std::vector<float>& inv_std) {
  if (activation != BatchNormActivation::kRelu) return {};
  const float scale = gamma[c] * inv_std[c];
  return {true, scale, beta[c] - mean[c] * scale};
}

// Each channel's total over the planes, then the count of values; the group's where there is one.
std::vector<double> Totals(const std::vector<double>& per_plane, int channels, double count,
                           const GroupSums& group) {
  std::vector<double> totals(channels + 1);
  for (int c = 0; c < channels; ++c) totals[c] = ChannelTotal(per_plane, channels, c);
  totals[channels] = count;
  if (group) group(&totals);
  return totals;
}

}  // namespace

// Sums in double: a channel may hold a million values. A group's sums are
// exchanged between the passes.
void BatchNormTrainForward(const BatchNormGeometry& g, int batch, const float* x, const float* gamma,
                           const float* beta, float* y, std::vector<float>* mean, std::vector<float>* inv_std,
                           std::vector<float>* var, const GroupSums& group, BatchNormActivation activation) {
  if (GpuOps* gpu = CurrentGpuOps()) return gpu->BatchNormTrainForward(g, batch, x, gamma, beta, y, mean);
  const int channels = g.channels;
  const Planes planes{channels, g.plane, static_cast<size_t>(batch) * channels};
  std::vector<double> per_plane(planes.count);
  ForPlanes(planes, [&](size_t begin, size_t end) { PlaneSums(x, planes, begin, end, per_plane.data()); });
  const std::vector<double> sums = Totals(per_plane, channels, static_cast<double>(batch) * g.plane, group);
  const double count = sums[channels];
  std::vector<double> means(channels);
  for (int c = 0; c < channels; ++c) means[c] = sums[c] / count;
  ForPlanes(planes, [&](size_t begin, size_t end) {
    PlaneSquares(x, planes, begin, end, means.data(), per_plane.data());
  });
  const std::vector<double> squares =
      Totals(per_plane, channels, static_cast<double>(batch) * g.plane, group);
  mean->resize(channels);
  inv_std->resize(channels);
  var->resize(channels);
  std::vector<float> scale(channels), shift(channels);
  for (int c = 0; c < channels; ++c) {
    const double biased = squares[c] / count;
    const float inv = static_cast<float>(1.0 / std::sqrt(biased + g.eps));
    (*mean)[c] = static_cast<float>(means[c]);
    (*inv_std)[c] = inv;
    (*var)[c] = static_cast<float>(count > 1.0 ? squares[c] / (count - 1.0) : biased);
    scale[c] = gamma[c] * inv;
    shift[c] = beta[c] - (*mean)[c] * scale[c];
  }
  ForPlanes(planes, [&](size_t begin, size_t end) {
    ScaleShift(x, planes, begin, end, scale.data(), shift.data(), activation, y);
  });
}

void BatchNormInferenceForward(const BatchNormGeometry& g, int batch, const float* x, const float* gamma,
                               const float* beta, const float* running_mean, const float* running_var,
                               float* y, BatchNormActivation activation) {
  if (GpuOps* gpu = CurrentGpuOps())
    return gpu->BatchNormInferenceForward(g, batch, x, gamma, beta, running_mean, running_var, y);
  const Planes planes{g.channels, g.plane, static_cast<size_t>(batch) * g.channels};
  std::vector<float> scale(g.channels), shift(g.channels);
  for (int c = 0; c < g.channels; ++c) {
    scale[c] = gamma[c] / std::sqrt(running_var[c] + g.eps);
    shift[c] = beta[c] - running_mean[c] * scale[c];
  }
  ForPlanes(planes, [&](size_t begin, size_t end) {
    ScaleShift(x, planes, begin, end, scale.data(), shift.data(), activation, y);
  });
}

// With x̂ = (x − mean)·inv_std: dbeta = Σ dy and dgamma = Σ dy·x̂ over this
// worker's records, and dx = gamma·inv_std·(dy − Σdy/M − x̂·Σdy·x̂/M) from
// those sums over the group's M values.
void BatchNormBackward(const BatchNormGeometry& g, int batch, const float* x, const float* dy,
                       const float* gamma, const std::vector<float>& mean, const std::vector<float>& inv_std,
                       float* dx, float* dgamma, float* dbeta, GradWrite write, const GroupSums& group,
                       BatchNormActivation activation, const float* beta) {
  if (GpuOps* gpu = CurrentGpuOps())
    return gpu->BatchNormBackward(g, batch, x, dy, gamma, &mean, dx, dgamma, dbeta, write);
  const int channels = g.channels;
  const Planes planes{channels, g.plane, static_cast<size_t>(batch) * channels};
  std::vector<ChannelGrad> channel(channels);
  for (int c = 0; c < channels; ++c)
    channel[c] = {mean[c], inv_std[c], 0.0f, 0.0f, 0.0f, MaskOf(activation, c, gamma, beta, mean, inv_std)};
  std::vector<double> per_plane_dy(planes.count), per_plane_dy_xhat(planes.count);
  ForPlanes(planes, [&](size_t begin, size_t end) {
    PlaneGradSums(x, dy, planes, begin, end, channel.data(), per_plane_dy.data(), per_plane_dy_xhat.data());
  });
  // Per channel: Σdy, then Σdy·x̂; then the count of values. Every worker of
  // the group takes part, even one whose dx nobody wants.
  const double count = static_cast<double>(batch) * g.plane;
  std::vector<double> sums(2 * channels + 1);
  for (int c = 0; c < channels; ++c) {
    sums[c] = ChannelTotal(per_plane_dy, channels, c);
    sums[channels + c] = ChannelTotal(per_plane_dy_xhat, channels, c);
    dbeta[c] = static_cast<float>(sums[c]);
    dgamma[c] = static_cast<float>(sums[channels + c]);
  }
  sums[2 * channels] = count;
  if (group) group(&sums);
  if (!dx) return;
  const double total = sums[2 * channels];
  for (int c = 0; c < channels; ++c) {
    channel[c].k = gamma[c] * inv_std[c];
    channel[c].mean_dy = static_cast<float>(sums[c] / total);
    channel[c].mean_dy_xhat = static_cast<float>(sums[channels + c] / total);
  }
  ForPlanes(planes, [&](size_t begin, size_t end) {
    InputGrad(x, dy, planes, begin, end, channel.data(), dx, write);
  });
}

void BatchNormRunningChanges(const BatchNormGeometry& g, float momentum, const float* running_mean,
                             const float* running_var, const std::vector<float>& mean,
                             const std::vector<float>& var, float* mean_change, float* var_change) {
  if (GpuOps* gpu = CurrentGpuOps())
    return gpu->BatchNormRunningChanges(g, momentum, running_mean, running_var, &mean, mean_change,
                                        var_change);
  for (int c = 0; c < g.channels; ++c) {
    mean_change[c] = momentum * (running_mean[c] - mean[c]);
    var_change[c] = momentum * (running_var[c] - var[c]);
  }
}

}  // namespace shoal
