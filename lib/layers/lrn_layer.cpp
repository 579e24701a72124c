// Local response normalisation across the channels of a [C,H,W] source.
#include "layers/layer_types.h"
#include "ops/lrn.h"

namespace shoal {
namespace {

class LrnLayer : public Layer {
 public:
  Status Setup(const Fields& fields, const std::vector<const Layer*>& srcs) override {
    SHOAL_RETURN_IF_ERROR(RequireImageSource(fields, srcs));
    const Shape& in = srcs[0]->out_shape();
    g_.channels = in[0];
    g_.plane = in[1] * in[2];
    double alpha, beta, k;
    SHOAL_RETURN_IF_ERROR(fields.Int("local_size", 5, &g_.size, 1, kMaxWindow));
    SHOAL_RETURN_IF_ERROR(fields.Float("alpha", 1e-4, &alpha, 0.0, 1e6));
    SHOAL_RETURN_IF_ERROR(fields.Float("beta", 0.75, &beta, 0.0, 16.0));
    // k > 0 keeps every scale positive (a power of 0 has no gradient).
    SHOAL_RETURN_IF_ERROR(fields.Float("k", 1.0, &k, 1e-6, 1e6));
    g_.alpha = static_cast<float>(alpha);
    g_.beta = static_cast<float>(beta);
    g_.k = static_cast<float>(k);
    out_shape_ = in;
    return Status::Ok();
  }

  void Forward(Phase, const std::vector<Layer*>& srcs) override {
    LrnForward(g_, data_.dim(0), srcs[0]->data().data(), data_.data(), &scale_);
  }

  void Backward(const std::vector<Layer*>& srcs) override {
    if (srcs[0]->WantsGrad())
      LrnBackward(g_, data_.dim(0), srcs[0]->data().data(), data_.data(), grad_.data(), scale_,
                  srcs[0]->grad().data(), SourceGradWrite(0));
  }
  bool CanSetSourceGrads() const override { return true; }
  bool RunsOnGpu() const override { return LrnHasGpuForm(g_); }

  // A square, the window's running sum, a power and a product per value.
  double ForwardFlopsPerRecord() const override { return 6.0 * feature_size(); }
  // Channel c reads its window's neighbours: a part of the channels needs
  // the channels beside its range too, so a feature split charges the whole source.
  Dependency SourceDependency(size_t) const override { return Dependency::kFull; }

 private:
  LrnGeometry g_;
  std::vector<float> scale_;
};

}  // namespace

std::unique_ptr<Layer> NewLrnLayer() { return std::make_unique<LrnLayer>(); }

}  // namespace shoal
