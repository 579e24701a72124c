// The input of a net: records and their labels, fed by the worker each step.
#pragma once

#include "layers/layer.h"

namespace shoal {

class DataLayer : public Layer {
 public:
  Status Setup(const Fields& fields, const std::vector<const Layer*>& srcs) override;
  void Forward(Phase, const std::vector<Layer*>&) override {}
  void Backward(const std::vector<Layer*>&) override {}
  bool WantsGrad() const override { return false; }
  bool RunsOnGpu() const override { return true; }  // the worker fills its feature before the passes
  bool ReadsRecords() const override { return true; }

  std::vector<int32_t>& labels() { return labels_; }
  const std::vector<int32_t>& labels() const { return labels_; }

 private:
  std::vector<int32_t> labels_;
};

}  // namespace shoal
