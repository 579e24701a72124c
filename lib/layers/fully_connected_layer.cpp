// Fully connected (inner product): num_output units over the flattened source;
// with axis: 1, over each row of a sequence [steps, ...] (each step's own
// product, the weights shared: a char-RNN's output layer).
#include <cmath>

#include "layers/layer_types.h"
#include "ops/fully_connected.h"

namespace shoal {
namespace {

class FullyConnectedLayer : public Layer {
 public:
  Status Setup(const Fields& fields, const std::vector<const Layer*>& srcs) override {
    if (srcs.size() != 1) return fields.Error("needs exactly one source layer");
    SHOAL_RETURN_IF_ERROR(fields.RequiredInt("num_output", &out_, 1, kMaxUnits));
    int axis;
    SHOAL_RETURN_IF_ERROR(fields.Int("axis", 0, &axis, 0, 1));
    const Shape& in = srcs[0]->out_shape();
    if (axis == 1 && in.size() < 2)
      return fields.FieldError("axis", "is 1 but '" + srcs[0]->name() + "' gives " + ShapeToString(in) +
                                           ", not a sequence [steps, ...]");
    rows_ = axis == 1 ? in[0] : 1;
    in_ = static_cast<int>(srcs[0]->feature_size() / rows_);
    out_shape_ = axis == 1 ? Shape{rows_, out_} : Shape{out_};
    // PyTorch's Linear default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for both.
    ParamInit init{ParamInit::Kind::kUniform, 1.0f / std::sqrt(static_cast<float>(in_))};
    AddParam("weight", {out_, in_}, init);
    AddParam("bias", {out_}, init);
    return Status::Ok();
  }

  void Forward(Phase, const std::vector<Layer*>& srcs) override {
    FullyConnectedForward(data_.dim(0) * rows_, in_, out_, srcs[0]->data().data(), params_[0].value.data(),
                          params_[1].value.data(), data_.data());
  }

  void Backward(const std::vector<Layer*>& srcs) override {
    float* dx = srcs[0]->WantsGrad() ? srcs[0]->grad().data() : nullptr;
    FullyConnectedBackward(data_.dim(0) * rows_, in_, out_, srcs[0]->data().data(), params_[0].value.data(),
                           grad_.data(), dx, params_[0].grad.data(), params_[1].grad.data(),
                           SourceGradWrite(0));
  }
  bool CanSetSourceGrads() const override { return true; }
  bool RunsOnGpu() const override { return true; }

  // A sequence's units interleave with its steps: not a contiguous range to cut.
  bool SplitsOutputs() const override { return rows_ == 1; }
  double ForwardFlopsPerRecord() const override { return 2.0 * rows_ * in_ * out_; }
  double RowsPerRecord() const override { return rows_; }

 private:
  int in_ = 0, out_ = 0;
  int rows_ = 1;  // rows a record: a sequence's steps with axis 1
};

}  // namespace

std::unique_ptr<Layer> NewFullyConnectedLayer() { return std::make_unique<FullyConnectedLayer>(); }

}  // namespace shoal
