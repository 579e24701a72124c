#include "ops/batch_norm.h"

#include <cmath>
#include <vector>

#include "ops/gpu_ops.h"
#include "ops/parallel.h"

namespace shoal {
namespace {

// One channel's values: `batch` planes of `plane` values, each `stride` after
// the one before (channel c of every record of [C, P]).
struct ChannelPlanes {
  size_t first, stride;
  int batch, plane;
  size_t at(int r) const { return first + r * stride; }
};

// A fused ReLU's mask over a channel: a value of dy counts where the forward
// pass's ŷ = x·scale + shift, computed again as it computed it, is positive.
struct ReluMask {
  bool on = false;
  float scale = 0.0f, shift = 0.0f;
};

// Runs fn(c, planes) for each channel c, the channels split over the compute threads.
template <typename Fn>
void ForChannels(const BatchNormGeometry& g, int batch, const Fn& fn) {
  const size_t plane = static_cast<size_t>(g.plane), record = plane * g.channels;
  ParallelFor(g.channels, [&](int, int begin, int end) {
    for (int c = begin; c < end; ++c) fn(c, ChannelPlanes{c * plane, record, batch, g.plane});
  });
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

// The kernels below sweep a channel's planes: they are compiled for AVX-512
// and AVX2 as well, chosen at load by the CPU (the build targets plain
// x86-64). This file compiles without fused multiply-adds (CMakeLists.txt),
// so each clone computes the same bits.
#define SHOAL_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

SHOAL_VECTOR_CLONES double ChannelSum(const float* x, ChannelPlanes ch) {
  double sum = 0.0;
  for (int r = 0; r < ch.batch; ++r) {
    const float* plane = x + ch.at(r);
    sum += PlaneSum(ch.plane, [&](int p) { return static_cast<double>(plane[p]); });
  }
  return sum;
}

SHOAL_VECTOR_CLONES double ChannelSquares(const float* x, ChannelPlanes ch, double mean) {
  double squares = 0.0;
  for (int r = 0; r < ch.batch; ++r) {
    const float* plane = x + ch.at(r);
    squares += PlaneSum(ch.plane, [&](int p) {
      const double d = plane[p] - mean;
      return d * d;
    });
  }
  return squares;
}

// y = x·scale + shift over the channel, or its ReLU (as ReluForward computes it).
SHOAL_VECTOR_CLONES void ScaleShift(const float* x, ChannelPlanes ch, float scale, float shift,
                                    BatchNormActivation activation, float* y) {
  for (int r = 0; r < ch.batch; ++r) {
    const float* in = x + ch.at(r);
    float* out = y + ch.at(r);
    if (activation == BatchNormActivation::kRelu) {
      for (int p = 0; p < ch.plane; ++p) {
        const float v = in[p] * scale + shift;
        out[p] = v > 0.0f ? v : 0.0f;
      }
    } else {
      for (int p = 0; p < ch.plane; ++p) out[p] = in[p] * scale + shift;
    }
  }
}

// The channel's sums of dy and dy·x̂. Two sweeps of a plane, each of one
// sum, run faster than one of both.
SHOAL_VECTOR_CLONES void ChannelGradSums(const float* x, const float* dy, ChannelPlanes ch, float m,
                                         float inv, ReluMask mask, double* sum_dy, double* sum_dy_xhat) {
  *sum_dy = *sum_dy_xhat = 0.0;
  for (int r = 0; r < ch.batch; ++r) {
    const float* xs = x + ch.at(r);
    const float* dys = dy + ch.at(r);
    if (mask.on) {
      // ReluBackward's values, as the batch norm would have read them, made
      // first: the sums over a mask do not run as vector loops.
      thread_local std::vector<float> masked;
      masked.resize(ch.plane);
      float* __restrict d = masked.data();
      for (int p = 0; p < ch.plane; ++p) {
        const float v = dys[p];  // loaded whatever the mask says, as ReluBackward does
        d[p] = xs[p] * mask.scale + mask.shift > 0.0f ? v : 0.0f;
      }
      dys = d;
    }
    *sum_dy += PlaneSum(ch.plane, [&](int p) { return static_cast<double>(dys[p]); });
    *sum_dy_xhat +=
        PlaneSum(ch.plane, [&](int p) { return static_cast<double>(dys[p]) * ((xs[p] - m) * inv); });
  }
}

// dx = k·(dy − mean_dy − x̂·mean_dy_xhat) over the channel, x̂ = (x − m)·inv.
SHOAL_VECTOR_CLONES void ChannelInputGrad(const float* x, const float* dy, ChannelPlanes ch, float m,
                                          float inv, float k, float mean_dy, float mean_dy_xhat,
                                          ReluMask mask, float* dx, GradWrite write) {
  // WriteGrad's loops, written out: a template it instantiates would not take this clone's instructions.
  for (int r = 0; r < ch.batch; ++r) {
    const float* xs = x + ch.at(r);
    const float* dys = dy + ch.at(r);
    float* __restrict out = dx + ch.at(r);
    if (mask.on) {
      const auto d = [&](int p) {
        const float v = dys[p];  // loaded whatever the mask says: the loop stays a vector one (ReluBackward)
        return xs[p] * mask.scale + mask.shift > 0.0f ? v : 0.0f;
      };
      if (write == GradWrite::kAdd)
        for (int p = 0; p < ch.plane; ++p) out[p] += k * (d(p) - mean_dy - (xs[p] - m) * inv * mean_dy_xhat);
      else
        for (int p = 0; p < ch.plane; ++p) out[p] = k * (d(p) - mean_dy - (xs[p] - m) * inv * mean_dy_xhat);
    } else if (write == GradWrite::kAdd)
      for (int p = 0; p < ch.plane; ++p) out[p] += k * (dys[p] - mean_dy - (xs[p] - m) * inv * mean_dy_xhat);
    else
      for (int p = 0; p < ch.plane; ++p) out[p] = k * (dys[p] - mean_dy - (xs[p] - m) * inv * mean_dy_xhat);
  }
}

#undef SHOAL_VECTOR_CLONES

// Channel c's statistics from its sum and squares over `count` values, then y.
void NormalizeChannel(const BatchNormGeometry& g, int c, ChannelPlanes ch, const float* x, const float* gamma,
                      const float* beta, double m, double squares, double count,
                      BatchNormActivation activation, float* y, std::vector<float>* mean,
                      std::vector<float>* inv_std, std::vector<float>* var) {
  const double biased = squares / count;
  const float inv = static_cast<float>(1.0 / std::sqrt(biased + g.eps));
  (*mean)[c] = static_cast<float>(m);
  (*inv_std)[c] = inv;
  (*var)[c] = static_cast<float>(count > 1.0 ? squares / (count - 1.0) : biased);
  const float scale = gamma[c] * inv;
  ScaleShift(x, ch, scale, beta[c] - (*mean)[c] * scale, activation, y);
}

// The mask of channel c's fused ReLU: its scale and shift as NormalizeChannel computes them.
ReluMask MaskOf(BatchNormActivation activation, int c, const float* gamma, const float* beta,
                const std::vector<float>& mean, const std::vector<float>& inv_std) {
  if (activation != BatchNormActivation::kRelu) return {};
  const float scale = gamma[c] * inv_std[c];
  return {true, scale, beta[c] - mean[c] * scale};
}

// dx = gamma·inv_std·(dy − Σdy/M − x̂·Σdy·x̂/M) over channel c's M values.
void InputGrad(int c, ChannelPlanes ch, const float* x, const float* dy, const float* gamma, float m,
               float inv, double sum_dy, double sum_dy_xhat, double count, ReluMask mask, float* dx,
               GradWrite write) {
  ChannelInputGrad(x, dy, ch, m, inv, gamma[c] * inv, static_cast<float>(sum_dy / count),
                   static_cast<float>(sum_dy_xhat / count), mask, dx, write);
}

}  // namespace

// Sums in double: a channel may hold a million values. Without a group each
// channel is done in one go, its values still in cache; a group's sums are
// exchanged between the passes over every channel.
void BatchNormTrainForward(const BatchNormGeometry& g, int batch, const float* x, const float* gamma,
                           const float* beta, float* y, std::vector<float>* mean, std::vector<float>* inv_std,
                           std::vector<float>* var, const GroupSums& group, BatchNormActivation activation) {
  if (GpuOps* gpu = CurrentGpuOps()) return gpu->BatchNormTrainForward(g, batch, x, gamma, beta, y, mean);
  mean->resize(g.channels);
  inv_std->resize(g.channels);
  var->resize(g.channels);
  const double count = static_cast<double>(batch) * g.plane;
  if (!group) {
    ForChannels(g, batch, [&](int c, ChannelPlanes ch) {
      const double m = ChannelSum(x, ch) / count;
      NormalizeChannel(g, c, ch, x, gamma, beta, m, ChannelSquares(x, ch, m), count, activation, y, mean,
                       inv_std, var);
    });
    return;
  }
  const size_t channels = static_cast<size_t>(g.channels);
  std::vector<double> sums(channels + 1), squares(channels + 1);
  ForChannels(g, batch, [&](int c, ChannelPlanes ch) { sums[c] = ChannelSum(x, ch); });
  sums[channels] = count;
  group(&sums);
  const double total = sums[channels];
  ForChannels(g, batch,
              [&](int c, ChannelPlanes ch) { squares[c] = ChannelSquares(x, ch, sums[c] / total); });
  squares[channels] = count;
  group(&squares);
  ForChannels(g, batch, [&](int c, ChannelPlanes ch) {
    NormalizeChannel(g, c, ch, x, gamma, beta, sums[c] / total, squares[c], total, activation, y, mean,
                     inv_std, var);
  });
}

void BatchNormInferenceForward(const BatchNormGeometry& g, int batch, const float* x, const float* gamma,
                               const float* beta, const float* running_mean, const float* running_var,
                               float* y, BatchNormActivation activation) {
  if (GpuOps* gpu = CurrentGpuOps())
    return gpu->BatchNormInferenceForward(g, batch, x, gamma, beta, running_mean, running_var, y);
  ForChannels(g, batch, [&](int c, ChannelPlanes ch) {
    const float scale = gamma[c] / std::sqrt(running_var[c] + g.eps);
    ScaleShift(x, ch, scale, beta[c] - running_mean[c] * scale, activation, y);
  });
}

// With x̂ = (x − mean)·inv_std: dbeta = Σ dy and dgamma = Σ dy·x̂ over this
// worker's records, and dx from those sums over the group's.
void BatchNormBackward(const BatchNormGeometry& g, int batch, const float* x, const float* dy,
                       const float* gamma, const std::vector<float>& mean, const std::vector<float>& inv_std,
                       float* dx, float* dgamma, float* dbeta, GradWrite write, const GroupSums& group,
                       BatchNormActivation activation, const float* beta) {
  if (GpuOps* gpu = CurrentGpuOps())
    return gpu->BatchNormBackward(g, batch, x, dy, gamma, &mean, dx, dgamma, dbeta, write);
  const double count = static_cast<double>(batch) * g.plane;
  const size_t channels = static_cast<size_t>(g.channels);
  // Per channel: Σdy, then Σdy·x̂; then the count of values.
  std::vector<double> sums(group ? 2 * channels + 1 : 0);
  ForChannels(g, batch, [&](int c, ChannelPlanes ch) {
    double sum_dy, sum_dy_xhat;
    const ReluMask mask = MaskOf(activation, c, gamma, beta, mean, inv_std);
    ChannelGradSums(x, dy, ch, mean[c], inv_std[c], mask, &sum_dy, &sum_dy_xhat);
    dbeta[c] = static_cast<float>(sum_dy);
    dgamma[c] = static_cast<float>(sum_dy_xhat);
    if (group) {
      sums[c] = sum_dy;
      sums[channels + c] = sum_dy_xhat;
    } else if (dx) {
      InputGrad(c, ch, x, dy, gamma, mean[c], inv_std[c], sum_dy, sum_dy_xhat, count, mask, dx, write);
    }
  });
  if (!group) return;
  // Every worker of the group takes part, even one whose dx nobody wants.
  sums[2 * channels] = count;
  group(&sums);
  if (!dx) return;
  ForChannels(g, batch, [&](int c, ChannelPlanes ch) {
    InputGrad(c, ch, x, dy, gamma, mean[c], inv_std[c], sums[c], sums[channels + c], sums[2 * channels],
              MaskOf(activation, c, gamma, beta, mean, inv_std), dx, write);
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
