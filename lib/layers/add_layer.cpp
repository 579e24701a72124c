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

  void Forward(Phase, const std::vector<Layer*>& srcs) override {
    IdentityForward(data_.size(), srcs[0]->data().data(), data_.data());
    for (size_t k = 1; k < srcs.size(); ++k) AddInto(data_.size(), srcs[k]->data().data(), data_.data());
  }

  // Each source's gradient is the sum's.
  void Backward(const std::vector<Layer*>& srcs) override {
    for (size_t k = 0; k < srcs.size(); ++k)
      if (srcs[k]->WantsGrad())
        IdentityBackward(data_.size(), grad_.data(), srcs[k]->grad().data(), SourceGradWrite(k));
  }
  bool CanSetSourceGrads() const override { return true; }
  bool RunsOnGpu() const override { return true; }
  double ForwardFlopsPerRecord() const override {
    return static_cast<double>(feature_size()) * static_cast<double>(sources_ - 1);
  }
  Dependency SourceDependency(size_t) const override { return Dependency::kElementwise; }

 private:
  size_t sources_ = 2;
};

}  // namespace

std::unique_ptr<Layer> NewAddLayer() { return std::make_unique<AddLayer>(); }

}  // namespace shoal
