// A Bernoulli–Bernoulli restricted Boltzmann machine's passes (Hinton, "A
// practical guide to training restricted Boltzmann machines", 2010): weights
// W[hidden, visible] laid out as a fully connected layer's (an encoder starts
// from them as they are), visible bias a[visible], hidden bias b[hidden].
#pragma once

#include <cstdint>

namespace shoal {

// Binary hidden units (Bernoulli), or linear ones with unit Gaussian noise
// (the code layer of Hinton and Salakhutdinov's auto-encoder).
enum class HiddenUnits { kBinary, kGaussian };

// The hidden units' means given v: p(h = 1 | v) = sigmoid(v Wᵀ + b) for
// binary units, v Wᵀ + b for Gaussian ones: [batch, hidden].
void RbmHiddenMeans(HiddenUnits units, int batch, int visible, int hidden, const float* v, const float* w,
                    const float* b, float* mean);
// p(v = 1 | h) = sigmoid(h W + a): [batch, visible].
void RbmVisibleProbabilities(int batch, int visible, int hidden, const float* h, const float* w,
                             const float* a, float* pv);

// sample[r, i] = 1 where a uniform draw keyed by (keys[r], draw, i) falls
// below p[r, i], else 0. Counter-based: record r's draws depend on its key
// alone, not on the batch it is in nor on the order of the work.
void SampleBernoulli(int batch, int units, const float* p, const uint64_t* keys, uint64_t draw,
                     float* sample);
// sample[r, i] = mean[r, i] + a standard normal draw keyed alike (Box–Muller).
void SampleGaussian(int batch, int units, const float* mean, const uint64_t* keys, uint64_t draw,
                    float* sample);
// The sampler of `units`.
void SampleHidden(HiddenUnits units, int batch, int hidden, const float* mean, const uint64_t* keys,
                  uint64_t draw, float* sample);

// Contrastive divergence's estimate of the negative log-likelihood's
// gradient, a mean over the batch: the model's statistics (vk, phk, after k
// Gibbs steps) less the data's (v0, ph0). Sets dw, da and db.
void RbmGradients(int batch, int visible, int hidden, const float* v0, const float* ph0, const float* vk,
                  const float* phk, float* dw, float* da, float* db);

// The mean over the batch of each record's summed squared error.
double SquaredErrorPerRecord(int batch, int units, const float* x, const float* y);

}  // namespace shoal
