// The job's updater run inside a worker over the params it holds: a
// standalone run's only updater (LocalTable), and the local replica's under
// easgd (ElasticTable). Each update is one process's gradient, so the
// learning-rate scaling rule (train.scale_lr_with_workers) counts one worker.
#pragma once

#include <cstdint>
#include <vector>

#include "layers/layer.h"
#include "plan/plan.h"
#include "ps/updater.h"

namespace shoal {

// The job's update rule applied in place to the params a worker holds.
class LocalUpdater {
 public:
  // `scales`: per param, the factor its gradient is taken at before the rule
  // (1 for a gradient over this worker's own records).
  LocalUpdater(const Plan& plan, std::vector<Param*> params, std::vector<float> scales);
  // The update of step `step`: each param's value and state by its gradient,
  // at its learning rate (Param::lr_mult).
  void Apply(uint64_t step);

 private:
  std::vector<UpdaterConfig> updaters_;  // per param
  std::vector<Param*> params_;
  std::vector<float> scales_;
  std::vector<UpdaterState> state_;  // per param
};

}  // namespace shoal
