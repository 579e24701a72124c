#include "layers/softmax_loss_layer.h"

#include <cmath>

#include "layers/data_layer.h"
#include "ops/softmax_loss.h"

namespace shoal {

Status SoftmaxLossLayer::Setup(const Fields& fields, const std::vector<const Layer*>& srcs) {
  if (srcs.size() != 2 || !dynamic_cast<const DataLayer*>(srcs[1]))
    return fields.Error("srclayers must be [logits, data layer]");
  const Shape& logits = srcs[0]->out_shape();
  if (logits.size() != 1 && logits.size() != 2)
    return fields.Error("its logits source '" + srcs[0]->name() + "' gives " + ShapeToString(logits) +
                        ", expected a vector [classes] or a sequence [steps, classes]");
  steps_ = logits.size() == 2 ? logits[0] : 1;
  if (logits.size() == 2 && srcs[1]->feature_size() < static_cast<size_t>(steps_) + 1)
    return fields.Error("its logits are a sequence of " + std::to_string(steps_) +
                        " steps, so its data layer '" + srcs[1]->name() + "' must hold at least " +
                        std::to_string(steps_ + 1) +
                        " symbols a record (the labels are those at positions 1.." + std::to_string(steps_) +
                        "); it holds " + std::to_string(srcs[1]->feature_size()));
  out_shape_ = logits;
  return Status::Ok();
}

const int32_t* SoftmaxLossLayer::Labels(const Layer& data) {
  if (steps_ == 1) return static_cast<const DataLayer&>(data).labels().data();
  // A sequence's: the symbol after each step's, -1 where a value names none.
  const int batch = data_.dim(0), record = static_cast<int>(data.feature_size());
  labels_.resize(static_cast<size_t>(batch) * steps_);
  for (int r = 0; r < batch; ++r)
    for (int t = 0; t < steps_; ++t) {
      const float v = data.data()[static_cast<size_t>(r) * record + t + 1];
      labels_[static_cast<size_t>(r) * steps_ + t] =
          std::isfinite(v) && v >= 0.0f && v < static_cast<float>(classes())
              ? static_cast<int32_t>(std::lround(v))
              : -1;
    }
  return labels_.data();
}

void SoftmaxLossLayer::Forward(Phase, const std::vector<Layer*>& srcs) {
  const int32_t* labels = Labels(*srcs[1]);
  loss_ = SoftmaxCrossEntropyForward(data_.dim(0) * steps_, classes(), srcs[0]->data().data(), labels,
                                     data_.data(), &correct_);
}

void SoftmaxLossLayer::Backward(const std::vector<Layer*>& srcs) {
  SoftmaxCrossEntropyBackward(data_.dim(0) * steps_, classes(), data_.data(), Labels(*srcs[1]),
                              srcs[0]->grad().data());
}

}  // namespace shoal
