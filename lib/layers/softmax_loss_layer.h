// Softmax cross-entropy against the labels of a data layer:
// srclayers: [logits, data]. Its feature is the class probabilities.
#pragma once

#include "layers/layer.h"

namespace shoal {

class SoftmaxLossLayer : public Layer {
 public:
  Status Setup(const Fields& fields, const std::vector<const Layer*>& srcs) override;
  void Forward(Phase phase, const std::vector<Layer*>& srcs) override;
  void Backward(const std::vector<Layer*>& srcs) override;
  double ForwardFlopsPerRecord() const override { return 4.0 * out_shape_[0]; }
  bool ReadsRecords() const override { return true; }
  // The data source gives labels only.
  Dependency SourceDependency(size_t src) const override {
    return src == 0 ? Dependency::kFull : Dependency::kNone;
  }

  float loss() const { return loss_; }
  int classes() const { return out_shape_[0]; }
  int correct() const { return correct_; }

 private:
  float loss_ = 0.0f;
  int correct_ = 0;
};

}  // namespace shoal
