// The element-wise sum of its sources, which must all have one shape (a
// residual connection's join); nothing is broadcast.
#include "layers/layer_types.h"
#include "ops/elementwise.h"

namespace shoal {
namespace {

class AddLayer : public Layer {
 public:
  Status Setup(const Fields& fields, const std::vector<const Layer*>& srcs) override {
    if (srcs.size() < 2) return fields.Error("needs at least two source layers");
    for (const Layer* src : srcs)
      if (src->out_shape() != srcs[0]->out_shape())
        return fields.FieldError(
            "srclayers", "'" + src->name() + "' gives " + ShapeToString(src->out_shape()) +
                             ", which is not the shape of '" + srcs[0]->name() + "' " +
                             ShapeToString(srcs[0]->out_shape()) + " (an add layer broadcasts nothing)");
    out_shape_ = srcs[0]->out_shape();
    sources_ = srcs.size();
    return Status::Ok();
  }

  // Fused, the sum's ReLU is written to the ReLU's feature (Layer::set_fused_relu).
  void Forward(Phase, const std::vector<Layer*>& srcs) override {
    inputs_.clear();
    for (const Layer* src : srcs) inputs_.push_back(src->data().data());
    SumForward(data_.size(), inputs_, fused_relu_ ? fused_relu_->data().data() : data_.data(),
               fused_relu_ != nullptr);
  }

  // Each source's gradient is the sum's: fused, the ReLU's gradient where
  // its feature is positive and 0 elsewhere, as the ReLU's pass gives it.
  void Backward(const std::vector<Layer*>& srcs) override {
    for (size_t k = 0; k < srcs.size(); ++k) {
      if (!srcs[k]->WantsGrad()) continue;
      float* dx = srcs[k]->grad().data();
      if (fused_relu_)
        ReluBackward(data_.size(), fused_relu_->data().data(), fused_relu_->grad().data(), dx,
                     SourceGradWrite(k));
      else
        IdentityBackward(data_.size(), grad_.data(), dx, SourceGradWrite(k));
    }
  }
  bool FusesRelu() const override { return true; }
  bool CanSetSourceGrads() const override { return true; }
  bool RunsOnGpu() const override { return true; }
  double ForwardFlopsPerRecord() const override {
    return static_cast<double>(feature_size()) * static_cast<double>(sources_ - 1);
  }
  Dependency SourceDependency(size_t) const override { return Dependency::kElementwise; }

 private:
  size_t sources_ = 2;
  std::vector<const float*> inputs_;  // the sources' features, this pass's
};

}  // namespace

std::unique_ptr<Layer> NewAddLayer() { return std::make_unique<AddLayer>(); }

}  // namespace shoal
