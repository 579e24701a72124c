#include "train/gradient_clip.h"

#include <cmath>

namespace shoal {

double ClipGradientNorm(const std::vector<Param*>& params, double max_norm) {
  double sum = 0.0;
  for (const Param* p : params)
    if (p->role == ParamRole::kTrained)
      for (size_t i = 0; i < p->grad.size(); ++i) sum += static_cast<double>(p->grad[i]) * p->grad[i];
  const double norm = std::sqrt(sum);
  if (norm <= max_norm) return norm;
  // PyTorch's factor: max_norm / (norm + 1e-6).
  const float scale = static_cast<float>(max_norm / (norm + 1e-6));
  for (Param* p : params)
    if (p->role == ParamRole::kTrained)
      for (size_t i = 0; i < p->grad.size(); ++i) p->grad[i] *= scale;
  return norm;
}

}  // namespace shoal
