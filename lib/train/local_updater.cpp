#include "train/local_updater.h"

namespace shoal {

LocalUpdater::LocalUpdater(const Plan& plan, std::vector<Param*> params, std::vector<float> scales)
    : params_(std::move(params)), scales_(std::move(scales)) {
  const UpdaterConfig updater = UpdaterFromTrain(plan.job.train, 1);
  for (Param* p : params_) {
    updaters_.push_back(UpdaterOfParam(updater, p->lr_mult, p->role));
    state_.push_back(NewUpdaterState(updater, p->value.size()));
  }
}

void LocalUpdater::Apply(uint64_t step) {
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& grad = params_[i]->grad;
    // Scaled in place: the next backward pass sets the gradient afresh.
    if (scales_[i] != 1.0f)
      for (size_t j = 0; j < grad.size(); ++j) grad[j] *= scales_[i];
    ApplyUpdate(updaters_[i], step, params_[i]->value.size(), grad.data(), params_[i]->value.data(),
                &state_[i]);
  }
}

}  // namespace shoal
