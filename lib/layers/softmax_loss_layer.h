// Softmax cross-entropy against the labels of a data layer:
// srclayers: [logits, data]. Its feature is the class probabilities.
#pragma once

#include "layers/loss_layer.h"

namespace shoal {

class SoftmaxLossLayer : public LossLayer {
 public:
  Status Setup(const Fields& fields, const std::vector<const Layer*>& srcs) override;
  void Forward(Phase phase, const std::vector<Layer*>& srcs) override;
  void Backward(const std::vector<Layer*>& srcs) override;
  double ForwardFlopsPerRecord() const override { return 4.0 * out_shape_[0]; }
  // The data source gives labels only.
  Dependency SourceDependency(size_t src) const override {
    return src == 0 ? Dependency::kFull : Dependency::kNone;
  }

  int classes() const override { return out_shape_[0]; }
};

}  // namespace shoal
