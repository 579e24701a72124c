// Convolution over a [C,H,W] source: num_output filters of kernel×kernel,
// each with a bias unless `bias: false` (as before a batch norm, whose shift
// takes its place).
#include <cmath>

#include "layers/layer_types.h"
#include "ops/convolution.h"
#include "ops/fast_convolution.h"
#include "ops/gpu_ops.h"
#include "ops/winograd_convolution.h"

namespace shoal {
namespace {

class ConvolutionLayer : public Layer {
 public:
  Status Setup(const Fields& fields, const std::vector<const Layer*>& srcs) override {
    SHOAL_RETURN_IF_ERROR(RequireImageSource(fields, srcs));
    const Shape& in = srcs[0]->out_shape();
    g_.channels = in[0];
    g_.height = in[1];
    g_.width = in[2];
    SHOAL_RETURN_IF_ERROR(fields.RequiredInt("num_output", &g_.filters, 1, kMaxFilters));
    SHOAL_RETURN_IF_ERROR(fields.RequiredInt("kernel", &g_.kernel, 1, kMaxWindow));
    SHOAL_RETURN_IF_ERROR(fields.Int("stride", 1, &g_.stride, 1, kMaxWindow));
    SHOAL_RETURN_IF_ERROR(fields.Int("pad", 0, &g_.pad, 0, kMaxWindow));
    SHOAL_RETURN_IF_ERROR(fields.Bool("bias", true, &bias_));
    if (g_.kernel > g_.height + 2 * g_.pad || g_.kernel > g_.width + 2 * g_.pad)
      return fields.FieldError("kernel", "is larger than the padded source " + ShapeToString(in));
    out_shape_ = {g_.filters, g_.out_height(), g_.out_width()};
    const int fan_in = g_.channels * g_.kernel * g_.kernel;
    ParamInit init{ParamInit::Kind::kUniform, 1.0f / std::sqrt(static_cast<float>(fan_in))};
    AddParam("weight", {g_.filters, g_.channels, g_.kernel, g_.kernel}, init);
    if (bias_) {
      AddParam("bias", {g_.filters}, init);
    } else {
      // The host's ops all add a bias: a zero one, and a gradient of it nobody
      // reads. A GPU's take none (null).
      zero_bias_.assign(g_.filters, 0.0f);
      unused_bias_grad_.resize(g_.filters);
    }
    fast_ = NewFastConvolution(g_);
    return Status::Ok();
  }

  void Forward(Phase, const std::vector<Layer*>& srcs) override {
    const int batch = data_.dim(0);
    const float *x = srcs[0]->data().data(), *w = params_[0].value.data();
    const float* b = bias_ ? params_[1].value.data() : CurrentGpuOps() ? nullptr : zero_bias_.data();
    on_fast_ = fast_ && fast_->Forward(batch, x, w, b, data_.data());
    if (!on_fast_) ConvolutionForward(g_, batch, x, w, b, data_.data(), &col_);
  }

  void Backward(const std::vector<Layer*>& srcs) override {
    float* dx = srcs[0]->WantsGrad() ? srcs[0]->grad().data() : nullptr;
    float* dw = params_[0].grad.data();
    float* db = bias_ ? params_[1].grad.data() : CurrentGpuOps() ? nullptr : unused_bias_grad_.data();
    const GradWrite dx_write = SourceGradWrite(0);
    if (on_fast_)
      fast_->Backward(data_.dim(0), srcs[0]->data().data(), params_[0].value.data(), grad_.data(), dx,
                      dx_write, dw, db);
    else
      ConvolutionBackward(g_, data_.dim(0), srcs[0]->data().data(), params_[0].value.data(), grad_.data(), dx,
                          dw, db, dx_write, &col_);
  }
  bool CanSetSourceGrads() const override { return true; }
  bool RunsOnGpu() const override { return true; }

  bool SplitsOutputs() const override { return true; }
  double ForwardFlopsPerRecord() const override { return 2.0 * g_.filters * g_.col_rows() * g_.col_cols(); }
  // The products' rows: one an output pixel (the im2col matrix's columns).
  double RowsPerRecord() const override { return g_.col_cols(); }
  double ProductInner(bool winograd) const override { return winograd ? g_.channels : g_.col_rows(); }
  int WinogradFromUnits() const override {
    // A part keeps the geometry but for its filters (model parallelism). A
    // part with fewer filters can be taken where the whole is not (more of
    // its tiles fit a group); 0 prices those parts on the direct kernel.
    for (ConvGeometry part = g_; part.filters >= 1; --part.filters)
      if (!WinogradTakes(part)) return part.filters < g_.filters ? part.filters + 1 : 0;
    return 1;
  }

 private:
  ConvGeometry g_{};
  bool bias_ = true;
  std::vector<float> zero_bias_, unused_bias_grad_;  // without a bias
  std::vector<float> col_;                           // im2col's working memory
  std::unique_ptr<FastConvolution> fast_;            // null: im2col + sgemm
  bool on_fast_ = false;                             // how the last Forward ran
};

}  // namespace

std::unique_ptr<Layer> NewConvolutionLayer() { return std::make_unique<ConvolutionLayer>(); }

}  // namespace shoal
