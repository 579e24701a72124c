#include "layers/softmax_loss_layer.h"

#include "layers/data_layer.h"
#include "ops/softmax_loss.h"

namespace shoal {

Status SoftmaxLossLayer::Setup(const Fields& fields, const std::vector<const Layer*>& srcs) {
  if (srcs.size() != 2 || !dynamic_cast<const DataLayer*>(srcs[1]))
    return fields.Error("srclayers must be [logits, data layer]");
  if (srcs[0]->out_shape().size() != 1)
    return fields.Error("its logits source '" + srcs[0]->name() + "' gives " +
                        ShapeToString(srcs[0]->out_shape()) + ", expected a vector [classes]");
  out_shape_ = srcs[0]->out_shape();
  return Status::Ok();
}

void SoftmaxLossLayer::Forward(Phase, const std::vector<Layer*>& srcs) {
  const auto& labels = static_cast<DataLayer*>(srcs[1])->labels();
  loss_ = SoftmaxCrossEntropyForward(data_.dim(0), out_shape_[0], srcs[0]->data().data(),
                                     labels.data(), data_.data(), &correct_);
}

void SoftmaxLossLayer::Backward(const std::vector<Layer*>& srcs) {
  const auto& labels = static_cast<DataLayer*>(srcs[1])->labels();
  SoftmaxCrossEntropyBackward(data_.dim(0), out_shape_[0], data_.data(), labels.data(),
                              srcs[0]->grad().data());
}

}  // namespace shoal
