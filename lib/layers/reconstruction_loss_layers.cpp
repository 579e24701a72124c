// Losses of a reconstruction against a target of the same size (an
// auto-encoder's output against its data): srclayers [reconstruction, target].
// The target is a constant: no gradient flows into it. Each record's loss is
// summed over its units, the batch's the mean over records, as an RBM's
// reconstruction error is; the feature is each record's loss.
#include <algorithm>
#include <cmath>

#include "layers/layer_types.h"
#include "layers/loss_layer.h"

namespace shoal {
namespace {

class ReconstructionLossLayer : public LossLayer {
 public:
  Status Setup(const Fields& fields, const std::vector<const Layer*>& srcs) override {
    if (srcs.size() != 2) return fields.Error("srclayers must be [reconstruction, target]");
    if (srcs[0]->feature_size() != srcs[1]->feature_size())
      return fields.Error("its reconstruction '" + srcs[0]->name() + "' gives " +
                          ShapeToString(srcs[0]->out_shape()) + " but its target '" + srcs[1]->name() + "' " +
                          ShapeToString(srcs[1]->out_shape()) + ": they must have as many values a record");
    units_ = static_cast<int>(srcs[0]->feature_size());
    out_shape_ = {1};
    return Status::Ok();
  }
  void Forward(Phase, const std::vector<Layer*>& srcs) override {
    const int batch = data_.dim(0);
    const float* y = srcs[0]->data().data();
    const float* t = srcs[1]->data().data();
    double total = 0.0;
    for (int r = 0; r < batch; ++r) {
      double sum = 0.0;
      for (int i = 0; i < units_; ++i) sum += RecordTerm(y[r * units_ + i], t[r * units_ + i]);
      data_[r] = static_cast<float>(sum);
      total += sum;
    }
    loss_ = static_cast<float>(batch > 0 ? total / batch : 0.0);
  }
  void Backward(const std::vector<Layer*>& srcs) override {
    if (!srcs[0]->WantsGrad()) return;
    const size_t n = srcs[0]->data().size();
    const float scale = 1.0f / static_cast<float>(data_.dim(0));
    const float* y = srcs[0]->data().data();
    const float* t = srcs[1]->data().data();
    float* dy = srcs[0]->grad().data();
    for (size_t i = 0; i < n; ++i) dy[i] += scale * Derivative(y[i], t[i]);
  }
  double ForwardFlopsPerRecord() const override { return 4.0 * units_; }
  bool WantsGrad() const override { return false; }

 protected:
  virtual double RecordTerm(float y, float t) const = 0;
  virtual float Derivative(float y, float t) const = 0;

 private:
  int units_ = 0;
};

// (y − t)² summed over the units.
class EuclideanLossLayer : public ReconstructionLossLayer {
  double RecordTerm(float y, float t) const override { return (static_cast<double>(y) - t) * (y - t); }
  float Derivative(float y, float t) const override { return 2.0f * (y - t); }
};

// The cross-entropy of targets t in [0, 1] and sigmoid(z) of the logits z,
// summed over the units: max(z, 0) − z·t + log(1 + e^−|z|), which neither
// overflows nor loses the small terms; d/dz = sigmoid(z) − t.
class SigmoidCrossEntropyLossLayer : public ReconstructionLossLayer {
  double RecordTerm(float z, float t) const override {
    const double x = z;
    return std::max(x, 0.0) - x * t + std::log1p(std::exp(-std::fabs(x)));
  }
  float Derivative(float z, float t) const override { return 1.0f / (1.0f + std::exp(-z)) - t; }
};

}  // namespace

std::unique_ptr<Layer> NewEuclideanLossLayer() { return std::make_unique<EuclideanLossLayer>(); }
std::unique_ptr<Layer> NewSigmoidCrossEntropyLossLayer() {
  return std::make_unique<SigmoidCrossEntropyLossLayer>();
}

}  // namespace shoal
