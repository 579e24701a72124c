// Max or average pooling over a [C,H,W] source, windowed or global.
#include "config/choices.h"
#include "layers/layer_types.h"
#include "ops/pooling.h"

namespace shoal {

// A pooling layer's `pool`.
inline constexpr Named<PoolKind> kPoolKinds[] = {{PoolKind::kMax, "max"}, {PoolKind::kAvg, "avg"}};
template <>
struct ChoiceTable<PoolKind> {
  static constexpr const auto& rows = kPoolKinds;
};
static_assert(InEnumOrder<PoolKind>());

namespace {

class PoolingLayer : public Layer {
 public:
  Status Setup(const Fields& fields, const std::vector<const Layer*>& srcs) override {
    SHOAL_RETURN_IF_ERROR(RequireImageSource(fields, srcs));
    const Shape& in = srcs[0]->out_shape();
    SHOAL_RETURN_IF_ERROR(fields.Choice("pool", PoolKind::kMax, &g_.kind));
    g_.channels = in[0];
    g_.height = in[1];
    g_.width = in[2];
    bool global = false;
    SHOAL_RETURN_IF_ERROR(fields.Bool("global", false, &global));
    if (global) return SetupGlobal(fields);
    int kernel = 0;
    SHOAL_RETURN_IF_ERROR(fields.RequiredInt("kernel", &kernel, 1, kMaxWindow));
    g_.kernel_h = g_.kernel_w = kernel;
    SHOAL_RETURN_IF_ERROR(fields.Int("stride", kernel, &g_.stride, 1, kMaxWindow));
    SHOAL_RETURN_IF_ERROR(fields.Int("pad", 0, &g_.pad, 0, kernel / 2));
    SHOAL_RETURN_IF_ERROR(fields.Bool("ceil_mode", false, &g_.ceil_mode));
    if (kernel > g_.height + 2 * g_.pad || kernel > g_.width + 2 * g_.pad)
      return fields.FieldError(
          "kernel", "is larger than the source " + ShapeToString(in) + (g_.pad ? " with its padding" : ""));
    out_shape_ = {g_.channels, g_.out_height(), g_.out_width()};
    return Status::Ok();
  }

  void Forward(Phase, const std::vector<Layer*>& srcs) override {
    PoolForward(g_, data_.dim(0), srcs[0]->data().data(), data_.data(), &argmax_, Input());
  }

  void Backward(const std::vector<Layer*>& srcs) override {
    if (srcs[0]->WantsGrad())
      PoolBackward(g_, data_.dim(0), srcs[0]->data().data(), data_.data(), grad_.data(), argmax_,
                   srcs[0]->grad().data(), SourceGradWrite(0), Input());
  }
  bool FusesSourceRelu() const override { return g_.kind == PoolKind::kMax; }
  bool CanSetSourceGrads() const override { return true; }
  bool RunsOnGpu() const override { return true; }

  double ForwardFlopsPerRecord() const override { return 1.0 * feature_size() * g_.kernel_h * g_.kernel_w; }
  // Output channel c reads input channel c only.
  Dependency SourceDependency(size_t) const override { return Dependency::kElementwise; }

 private:
  // One window the size of the source: a [C, 1, 1] feature.
  Status SetupGlobal(const Fields& fields) {
    for (const char* field : {"kernel", "stride", "pad", "ceil_mode"})
      if (fields.Has(field)) return fields.FieldError(field, "does not go with global: true");
    g_.kernel_h = g_.height;
    g_.kernel_w = g_.width;
    out_shape_ = {g_.channels, 1, 1};
    return Status::Ok();
  }

  PoolInput Input() const { return relu_source_ ? PoolInput::kRelu : PoolInput::kAsIs; }

  PoolGeometry g_;
  std::vector<int32_t> argmax_;
};

}  // namespace

std::unique_ptr<Layer> NewPoolingLayer() { return std::make_unique<PoolingLayer>(); }

}  // namespace shoal
