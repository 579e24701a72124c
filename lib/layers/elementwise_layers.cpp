// Layers whose feature has the shape of their one source: relu, sigmoid, dropout, flatten.
#include <algorithm>

#include "layers/layer_types.h"
#include "ops/elementwise.h"

namespace shoal {
namespace {

Status SetupOneSource(const Fields& fields, const std::vector<const Layer*>& srcs) {
  return srcs.size() == 1 ? Status::Ok() : fields.Error("needs exactly one source layer");
}

// An activation applied to each value: kForward(n, x, y) and, from y, kBackward(n, y, dy, dx, write).
template <void (*kForward)(size_t, const float*, float*),
          void (*kBackward)(size_t, const float*, const float*, float*, GradWrite), int kFlopsPerValue>
class ActivationLayer : public Layer {
 public:
  Status Setup(const Fields& fields, const std::vector<const Layer*>& srcs) override {
    SHOAL_RETURN_IF_ERROR(SetupOneSource(fields, srcs));
    out_shape_ = srcs[0]->out_shape();
    return Status::Ok();
  }
  void Forward(Phase, const std::vector<Layer*>& srcs) override {
    kForward(data_.size(), srcs[0]->data().data(), data_.data());
  }
  void Backward(const std::vector<Layer*>& srcs) override {
    if (srcs[0]->WantsGrad())
      kBackward(data_.size(), data_.data(), grad_.data(), srcs[0]->grad().data(), SourceGradWrite(0));
  }
  bool CanSetSourceGrads() const override { return true; }
  bool RunsOnGpu() const override { return true; }
  double ForwardFlopsPerRecord() const override {
    return static_cast<double>(kFlopsPerValue) * feature_size();
  }
  Dependency SourceDependency(size_t) const override { return Dependency::kElementwise; }
};

using ReluLayer = ActivationLayer<ReluForward, ReluBackward, 1>;
using SigmoidLayer = ActivationLayer<SigmoidForward, SigmoidBackward, 4>;

class DropoutLayer : public Layer {
 public:
  Status Setup(const Fields& fields, const std::vector<const Layer*>& srcs) override {
    SHOAL_RETURN_IF_ERROR(SetupOneSource(fields, srcs));
    double ratio;
    SHOAL_RETURN_IF_ERROR(fields.Float("ratio", 0.5, &ratio, 0.0, 0.99));
    ratio_ = static_cast<float>(ratio);
    out_shape_ = srcs[0]->out_shape();
    return Status::Ok();
  }
  void Forward(Phase phase, const std::vector<Layer*>& srcs) override {
    const float* x = srcs[0]->data().data();
    if (phase == Phase::kTest) {
      std::copy(x, x + data_.size(), data_.data());
      return;
    }
    key_ = StreamKey();
    DropoutForward(data_.size(), ratio_, key_, x, data_.data());
  }
  void Backward(const std::vector<Layer*>& srcs) override {
    if (srcs[0]->WantsGrad())
      DropoutBackward(data_.size(), ratio_, key_, grad_.data(), srcs[0]->grad().data(), SourceGradWrite(0));
  }
  bool CanSetSourceGrads() const override { return true; }
  // Evaluation runs on the host.
  bool RunsOnGpu() const override { return true; }
  double ForwardFlopsPerRecord() const override { return static_cast<double>(feature_size()); }
  Dependency SourceDependency(size_t) const override { return Dependency::kElementwise; }

 private:
  float ratio_ = 0.5f;
  uint64_t key_ = 0;  // the training pass's mask's
};

class FlattenLayer : public Layer {
 public:
  Status Setup(const Fields& fields, const std::vector<const Layer*>& srcs) override {
    SHOAL_RETURN_IF_ERROR(SetupOneSource(fields, srcs));
    out_shape_ = {static_cast<int>(srcs[0]->feature_size())};
    return Status::Ok();
  }
  void Forward(Phase, const std::vector<Layer*>& srcs) override {
    IdentityForward(data_.size(), srcs[0]->data().data(), data_.data());
  }
  void Backward(const std::vector<Layer*>& srcs) override {
    if (srcs[0]->WantsGrad())
      IdentityBackward(data_.size(), grad_.data(), srcs[0]->grad().data(), SourceGradWrite(0));
  }
  bool RunsOnGpu() const override { return true; }
  bool CanSetSourceGrads() const override { return true; }
  // Channel-major: a slice of channels is a contiguous slice of the flat vector.
  Dependency SourceDependency(size_t) const override { return Dependency::kElementwise; }
};

}  // namespace

std::unique_ptr<Layer> NewReluLayer() { return std::make_unique<ReluLayer>(); }
std::unique_ptr<Layer> NewSigmoidLayer() { return std::make_unique<SigmoidLayer>(); }
std::unique_ptr<Layer> NewDropoutLayer() { return std::make_unique<DropoutLayer>(); }
std::unique_ptr<Layer> NewFlattenLayer() { return std::make_unique<FlattenLayer>(); }

}  // namespace shoal
