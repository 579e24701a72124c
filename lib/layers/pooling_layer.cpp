// Max pooling over a [C,H,W] source.
#include "layers/layer_types.h"
#include "ops/pooling.h"

namespace shoal {
namespace {

class PoolingLayer : public Layer {
 public:
  Status Setup(const Fields& fields, const std::vector<const Layer*>& srcs) override {
    SHOAL_RETURN_IF_ERROR(RequireImageSource(fields, srcs));
    const Shape& in = srcs[0]->out_shape();
    std::string pool;
    SHOAL_RETURN_IF_ERROR(fields.Choice("pool", "max", {"max"}, &pool));
    g_.channels = in[0];
    g_.height = in[1];
    g_.width = in[2];
    SHOAL_RETURN_IF_ERROR(fields.RequiredInt("kernel", &g_.kernel, 1, kMaxWindow));
    SHOAL_RETURN_IF_ERROR(fields.Int("stride", g_.kernel, &g_.stride, 1, kMaxWindow));
    if (g_.kernel > g_.height || g_.kernel > g_.width)
      return fields.FieldError("kernel", "is larger than the source " + ShapeToString(in));
    out_shape_ = {g_.channels, g_.out_height(), g_.out_width()};
    return Status::Ok();
  }

  void Forward(Phase, const std::vector<Layer*>& srcs) override {
    MaxPoolForward(g_, data_.dim(0), srcs[0]->data().data(), data_.data(), &argmax_);
  }

  void Backward(const std::vector<Layer*>& srcs) override {
    if (srcs[0]->WantsGrad())
      MaxPoolBackward(g_, data_.dim(0), srcs[0]->data().data(), data_.data(), grad_.data(), argmax_,
                      srcs[0]->grad().data(), SourceGradWrite(0));
  }
  bool CanSetSourceGrads() const override { return true; }
  bool RunsOnGpu() const override { return true; }

  double ForwardFlopsPerRecord() const override { return 1.0 * feature_size() * g_.kernel * g_.kernel; }
  // Output channel c reads input channel c only.
  Dependency SourceDependency(size_t) const override { return Dependency::kElementwise; }

 private:
  PoolGeometry g_{};
  std::vector<int32_t> argmax_;
};

}  // namespace

std::unique_ptr<Layer> NewPoolingLayer() { return std::make_unique<PoolingLayer>(); }

}  // namespace shoal
