// A restricted Boltzmann machine trained by contrastive divergence (SINGA
// §4.2.2; Hinton 2002): the visible units are its one source's feature (values
// in [0, 1], read as probabilities), the hidden units num_output, binary or
// Gaussian. Its feature is the hidden units' means given v (p(h | v) for
// binary ones), what the next RBM of a stack trains on; its loss, the squared
// error of the reconstruction p(v | h) of each record. A loss layer of its own:
// nothing back-propagates into it; Backward sets CD-k's parameter gradients
// from the chain its training pass ran (train.algorithm: cd).
#include <algorithm>
#include <cmath>

#include "core/hash.h"
#include "layers/layer_types.h"
#include "layers/loss_layer.h"
#include "ops/rbm.h"

namespace shoal {
namespace {

class RbmLayer : public LossLayer {
 public:
  Status Setup(const Fields& fields, const std::vector<const Layer*>& srcs) override {
    if (srcs.size() != 1) return fields.Error("needs exactly one source layer (the visible units)");
    SHOAL_RETURN_IF_ERROR(fields.RequiredInt("num_output", &hidden_, 1, kMaxUnits));
    SHOAL_RETURN_IF_ERROR(fields.Int("cd_k", 1, &k_, 1, 1000));
    SHOAL_RETURN_IF_ERROR(fields.Bool("persistent", false, &persistent_));
    std::string hidden;
    SHOAL_RETURN_IF_ERROR(fields.Choice("hidden", "binary", {"binary", "gaussian"}, &hidden));
    units_ = hidden == "binary" ? HiddenUnits::kBinary : HiddenUnits::kGaussian;
    visible_ = static_cast<int>(srcs[0]->feature_size());
    out_shape_ = {hidden_};
    // Weights of standard deviation 0.1 (SINGA's RBM example draws N(0, 0.1²)), as a uniform.
    AddParam("weight", {hidden_, visible_}, {ParamInit::Kind::kUniform, 0.1f * std::sqrt(3.0f)});
    AddParam("bias", {hidden_}, {ParamInit::Kind::kConstant, 0.0f});
    AddParam("visible_bias", {visible_}, {ParamInit::Kind::kConstant, 0.0f});
    return Status::Ok();
  }

  void Forward(Phase phase, const std::vector<Layer*>& srcs) override {
    const int batch = data_.dim(0);
    const float* v0 = srcs[0]->data().data();
    const float* w = params_[0].value.data();
    const float* b = params_[1].value.data();
    const float* a = params_[2].value.data();
    const size_t vn = static_cast<size_t>(batch) * visible_, hn = static_cast<size_t>(batch) * hidden_;
    float* ph0 = data_.data();
    RbmHiddenMeans(units_, batch, visible_, hidden_, v0, w, b, ph0);
    pv_.resize(vn);
    if (phase == Phase::kTest) {  // no draws: the mean-field reconstruction
      RbmVisibleProbabilities(batch, visible_, hidden_, ph0, w, a, pv_.data());
      loss_ = static_cast<float>(SquaredErrorPerRecord(batch, visible_, v0, pv_.data()));
      return;
    }
    h_.resize(hn);
    phk_.resize(hn);
    // The chain starts from the data (CD) or from where the last step's
    // chains ended (PCD; the data the first time, or when the batch changes).
    const float* start = v0;
    if (persistent_) {
      if (fantasy_.size() != vn) fantasy_.assign(v0, v0 + vn);
      start = fantasy_.data();
    }
    keys_.resize(batch);
    const uint64_t pass = Mix64(Mix64(draw_key_.seed) ^ draw_key_.step);
    for (int r = 0; r < batch; ++r)
      keys_[r] = HashFloats(pass, start + static_cast<size_t>(r) * visible_, visible_);
    if (persistent_) {
      RbmHiddenMeans(units_, batch, visible_, hidden_, start, w, b, phk_.data());
      SampleHidden(units_, batch, hidden_, phk_.data(), keys_.data(), 0, h_.data());
    } else {
      SampleHidden(units_, batch, hidden_, ph0, keys_.data(), 0, h_.data());
    }
    for (int t = 1; t <= k_; ++t) {
      RbmVisibleProbabilities(batch, visible_, hidden_, h_.data(), w, a, pv_.data());
      // The reconstruction error of the data's own chain, as Hinton's code reports it.
      if (t == 1 && !persistent_)
        loss_ = static_cast<float>(SquaredErrorPerRecord(batch, visible_, v0, pv_.data()));
      RbmHiddenMeans(units_, batch, visible_, hidden_, pv_.data(), w, b, phk_.data());
      if (t < k_) SampleHidden(units_, batch, hidden_, phk_.data(), keys_.data(), t, h_.data());
    }
    if (persistent_) {
      std::copy(pv_.begin(), pv_.end(), fantasy_.begin());
      // PCD's chains are not the data's: its error is the mean-field one.
      recon_.resize(vn);
      RbmVisibleProbabilities(batch, visible_, hidden_, ph0, w, a, recon_.data());
      loss_ = static_cast<float>(SquaredErrorPerRecord(batch, visible_, v0, recon_.data()));
    }
  }

  void Backward(const std::vector<Layer*>& srcs) override {
    const int batch = data_.dim(0);
    const float* v0 = srcs[0]->data().data();
    RbmGradients(batch, visible_, hidden_, v0, data_.data(), pv_.data(), phk_.data(), params_[0].grad.data(),
                 params_[2].grad.data(), params_[1].grad.data());
  }

  // A training pass: p(h|v0), then k of p(v|h) and p(h|v) (PCD: one more p(h|v)).
  double ForwardFlopsPerRecord() const override {
    return 2.0 * visible_ * hidden_ * (1 + 2 * k_ + (persistent_ ? 2 : 0));
  }
  // The data's and the model's statistics: two outer products.
  double BackwardFlopsPerRecord() const override { return 4.0 * visible_ * hidden_; }
  bool WantsGrad() const override { return false; }

 private:
  int visible_ = 0, hidden_ = 0, k_ = 1;
  bool persistent_ = false;
  HiddenUnits units_ = HiddenUnits::kBinary;
  std::vector<float> h_, pv_, phk_, fantasy_, recon_;
  std::vector<uint64_t> keys_;
};

}  // namespace

std::unique_ptr<Layer> NewRbmLayer() { return std::make_unique<RbmLayer>(); }

}  // namespace shoal
