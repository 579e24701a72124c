// Softmax cross-entropy against the labels of a data layer:
// srclayers: [logits, data]. Its feature is the class probabilities.
// Logits [steps, classes] make it a sequence's (a char-RNN's): record r's
// labels are then its data values at positions 1..steps, the symbol after
// each one the net read, and the loss is the mean over records and steps.
#pragma once

#include <cstdint>
#include <vector>

#include "layers/loss_layer.h"

namespace shoal {

class SoftmaxLossLayer : public LossLayer {
 public:
  Status Setup(const Fields& fields, const std::vector<const Layer*>& srcs) override;
  void Forward(Phase phase, const std::vector<Layer*>& srcs) override;
  void Backward(const std::vector<Layer*>& srcs) override;
  double ForwardFlopsPerRecord() const override { return 4.0 * steps_ * out_shape_.back(); }
  // The data source gives labels only.
  Dependency SourceDependency(size_t src) const override {
    return src == 0 || steps_ > 1 ? Dependency::kFull : Dependency::kNone;
  }

  // A sequence's labels are read from the data layer's values on the host.
  bool RunsOnGpu() const override { return steps_ == 1; }

  int classes() const override { return out_shape_.back(); }
  int predictions_per_record() const override { return steps_; }

 private:
  // The batch's labels: the data layer's, or a sequence's from its values.
  const int32_t* Labels(const Layer& data);

  int steps_ = 1;                // 1 for a record's one label
  std::vector<int32_t> labels_;  // a sequence's, [batch, steps]
};

}  // namespace shoal
