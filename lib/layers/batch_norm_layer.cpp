// Batch normalisation over a [C, H, W] source (per channel) or a vector (per
// feature), as torch.nn.BatchNorm2d and BatchNorm1d: training normalises by
// the batch's statistics and moves the running ones toward them, evaluation
// uses the running ones. The running mean and variance are parameters of
// ParamRole::kRunningAverage: the servers keep them (checkpoints, recovery)
// and each step's change reaches them as a gradient does. With `sync` the
// training statistics span every worker's batch (PyTorch's SyncBatchNorm).
#include "comm/group_sum.h"
#include "layers/layer_types.h"
#include "ops/batch_norm.h"

namespace shoal {
namespace {

class BatchNormLayer : public Layer {
 public:
  Status Setup(const Fields& fields, const std::vector<const Layer*>& srcs) override {
    if (srcs.size() != 1) return fields.Error("needs exactly one source layer");
    const Shape& in = srcs[0]->out_shape();
    if (in.size() != 1 && in.size() != 3)
      return fields.FieldError("srclayers", "'" + srcs[0]->name() + "' gives " + ShapeToString(in) +
                                                "; batch norm takes a vector or an image [C, H, W]");
    g_.channels = in[0];
    g_.plane = in.size() == 3 ? in[1] * in[2] : 1;
    double eps, momentum;
    SHOAL_RETURN_IF_ERROR(fields.Float("eps", 1e-5, &eps, 1e-12, 1.0));
    SHOAL_RETURN_IF_ERROR(fields.Float("momentum", 0.1, &momentum, 0.0, 1.0));
    g_.eps = static_cast<float>(eps);
    momentum_ = static_cast<float>(momentum);
    SHOAL_RETURN_IF_ERROR(fields.Bool("sync", false, &sync_));
    const Shape per_channel{g_.channels};
    AddParam("weight", per_channel, {ParamInit::Kind::kConstant, 1.0f});
    AddParam("bias", per_channel, {ParamInit::Kind::kConstant, 0.0f});
    AddParam("running_mean", per_channel, {ParamInit::Kind::kConstant, 0.0f}).role =
        ParamRole::kRunningAverage;
    AddParam("running_var", per_channel, {ParamInit::Kind::kConstant, 1.0f}).role =
        ParamRole::kRunningAverage;
    out_shape_ = in;
    return Status::Ok();
  }

  void Forward(Phase phase, const std::vector<Layer*>& srcs) override {
    const float* x = srcs[0]->data().data();
    const float* gamma = params_[0].value.data();
    const float* beta = params_[1].value.data();
    float* y = fused_relu_ ? fused_relu_->data().data() : data_.data();
    if (phase == Phase::kTest) {
      BatchNormInferenceForward(g_, data_.dim(0), x, gamma, beta, params_[2].value.data(),
                                params_[3].value.data(), y, Activation());
      return;
    }
    BatchNormTrainForward(g_, data_.dim(0), x, gamma, beta, y, &mean_, &inv_std_, &var_,
                          OverGroup("statistics"), Activation());
  }

  // The running averages' "gradients" are their change, old − new, with
  // new = (1 − momentum)·old + momentum·batch: momentum·(old − batch).
  void Backward(const std::vector<Layer*>& srcs) override {
    Layer* src = srcs[0];
    const float* dy = fused_relu_ ? fused_relu_->grad().data() : grad_.data();
    BatchNormBackward(g_, data_.dim(0), src->data().data(), dy, params_[0].value.data(), mean_, inv_std_,
                      src->WantsGrad() ? src->grad().data() : nullptr, params_[0].grad.data(),
                      params_[1].grad.data(), SourceGradWrite(0), OverGroup("gradient sums"), Activation(),
                      params_[1].value.data());
    BatchNormRunningChanges(g_, momentum_, params_[2].value.data(), params_[3].value.data(), mean_, var_,
                            params_[2].grad.data(), params_[3].grad.data());
  }
  bool CanSetSourceGrads() const override { return true; }
  bool FusesRelu() const override { return true; }
  // A synchronised layer's sums cross the host's network.
  bool RunsOnGpu() const override { return !sync_; }

  // Statistics (two passes), then a multiply-add per value.
  double ForwardFlopsPerRecord() const override { return 5.0 * feature_size(); }
  // Each channel's statistics span the whole batch of the worker that computes
  // it: in a model-parallel group the layer runs on rows, each worker's own.
  Dependency SourceDependency(size_t) const override { return Dependency::kFull; }
  // Synchronised: the sums, then the squares, forward; dy's two sums backward
  // (BatchNormTrainForward, BatchNormBackward), each a double a channel,
  // with the count, as two floats each.
  GroupExchange GroupExchangePerStep() const override {
    if (!sync_) return {};
    return {3, 1, 2.0 * (4.0 * g_.channels + 3.0)};
  }

 private:
  BatchNormActivation Activation() const {
    return fused_relu_ ? BatchNormActivation::kRelu : BatchNormActivation::kNone;
  }
  GroupSums OverGroup(const std::string& what) {
    if (!sync_ || !group_sum_) return nullptr;
    return [this, what](std::vector<double>* sums) {
      group_sum_->Sum(sums, what + " of layer '" + name() + "'");
    };
  }

  BatchNormGeometry g_;
  float momentum_ = 0.1f;
  bool sync_ = false;
  std::vector<float> mean_, inv_std_, var_;  // the last training pass's, per channel
};

}  // namespace

std::unique_ptr<Layer> NewBatchNormLayer() { return std::make_unique<BatchNormLayer>(); }

}  // namespace shoal
