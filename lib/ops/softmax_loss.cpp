#include "ops/softmax_loss.h"

#include <algorithm>
#include <cmath>

#include "ops/gpu_ops.h"

namespace shoal {

float SoftmaxCrossEntropyForward(int batch, int classes, const float* logits, const int32_t* labels,
                                 float* prob, int* correct) {
  if (GpuOps* gpu = CurrentGpuOps())
    return gpu->SoftmaxCrossEntropyForward(batch, classes, logits, labels, prob, correct);
  double loss = 0.0;
  int hits = 0;
  for (int i = 0; i < batch; ++i) {
    const float* z = logits + i * classes;
    float* p = prob + i * classes;
    int best = static_cast<int>(std::max_element(z, z + classes) - z);
    float zmax = z[best];
    double sum = 0.0;
    for (int j = 0; j < classes; ++j) {
      p[j] = std::exp(z[j] - zmax);
      sum += p[j];
    }
    for (int j = 0; j < classes; ++j) p[j] = static_cast<float>(p[j] / sum);
    if (labels[i] < 0 || labels[i] >= classes) continue;
    loss += -(z[labels[i]] - zmax - std::log(sum));
    if (best == labels[i]) ++hits;
  }
  if (correct) *correct = hits;
  return static_cast<float>(loss / batch);
}

void SoftmaxCrossEntropyBackward(int batch, int classes, const float* prob, const int32_t* labels,
                                 float* dlogits) {
  if (GpuOps* gpu = CurrentGpuOps())
    return gpu->SoftmaxCrossEntropyBackward(batch, classes, prob, labels, dlogits);
  const float inv = 1.0f / batch;
  for (int i = 0; i < batch; ++i) {
    if (labels[i] < 0 || labels[i] >= classes) continue;
    for (int j = 0; j < classes; ++j) dlogits[i * classes + j] += prob[i * classes + j] * inv;
    dlogits[i * classes + labels[i]] -= inv;
  }
}

}  // namespace shoal
