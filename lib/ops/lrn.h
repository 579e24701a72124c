// Local response normalisation across channels (Krizhevsky et al.; Caffe's
// and SINGA's LRN, torch.nn.LocalResponseNorm): over a [C, H, W] record,
//   y[c] = x[c] · s[c]^-beta,  s[c] = k + alpha / size · Σ x[j]²,
// the sum over channels j in [c − size/2, c + (size − 1)/2] that exist.
#pragma once

#include <vector>

#include "ops/grad_write.h"

namespace shoal {

struct LrnGeometry {
  int channels = 0, plane = 0;  // per record: C, and H·W
  int size = 5;
  float alpha = 1e-4f, beta = 0.75f, k = 1.0f;
};

// Keeps s (`scale`, resized here) for the backward pass.
void LrnForward(const LrnGeometry& g, int batch, const float* x, float* y, std::vector<float>* scale);
// From the forward pass's x, y and scale:
//   dx[i] = dy[i]·s[i]^-beta − 2·alpha·beta/size · x[i] · Σ dy[c]·y[c]/s[c]
// over the channels c whose window holds i.
void LrnBackward(const LrnGeometry& g, int batch, const float* x, const float* y, const float* dy,
                 const std::vector<float>& scale, float* dx, GradWrite write);

// Whether a GPU (gpu_ops.h) computes this LRN: cuDNN's, whose window is
// this one for odd sizes up to 15, with k ≥ 1e-5 and beta ≥ 0.01. There the
// scale stays unwritten: cuDNN's backward pass finds it from x.
inline bool LrnHasGpuForm(const LrnGeometry& g) {
  return g.size % 2 == 1 && g.size <= 15 && g.k >= 1e-5f && g.beta >= 0.01f;
}

}  // namespace shoal
