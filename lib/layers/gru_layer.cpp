// A GRU layer over whole sequences (SINGA §4.2.3's recurrent nets): its
// source is [steps, input], its feature every step's state [steps, num_output].
// The recurrence is unrolled inside the layer, one set of parameters shared by
// every step (SINGA's share_from), so back-propagation through time sums the
// steps' gradients before they leave the worker. Parameters as PyTorch's
// nn.GRU lays them out (gates r, z, n) and initialises them: uniform in
// ±1/sqrt(num_output). Each sequence starts from a zero state, unless
// `carry_state`: then a pass starts each row from the state the previous
// pass ended that row in (truncated BPTT: no gradient flows back into it),
// until ResetState (at each stream's start, and around an evaluation).
#include <algorithm>
#include <cmath>

#include "layers/layer_types.h"
#include "ops/gru.h"

namespace shoal {
namespace {

class GruLayer : public Layer {
 public:
  Status Setup(const Fields& fields, const std::vector<const Layer*>& srcs) override {
    if (srcs.size() != 1) return fields.Error("needs exactly one source layer");
    const Shape& in = srcs[0]->out_shape();
    if (in.size() != 2)
      return fields.Error("needs a sequence source [steps, inputs]; '" + srcs[0]->name() + "' gives " +
                          ShapeToString(in));
    SHOAL_RETURN_IF_ERROR(fields.RequiredInt("num_output", &shape_.hidden, 1, kMaxUnits / 3));
    SHOAL_RETURN_IF_ERROR(fields.Bool("carry_state", false, &carry_state_));
    shape_.steps = in[0];
    shape_.input = in[1];
    out_shape_ = {shape_.steps, shape_.hidden};
    const int gates = 3 * shape_.hidden;
    const ParamInit init{ParamInit::Kind::kUniform, 1.0f / std::sqrt(static_cast<float>(shape_.hidden))};
    AddParam("weight_ih", {gates, shape_.input}, init);
    AddParam("weight_hh", {gates, shape_.hidden}, init);
    AddParam("bias_ih", {gates}, init);
    AddParam("bias_hh", {gates}, init);
    return Status::Ok();
  }

  void Forward(Phase, const std::vector<Layer*>& srcs) override {
    shape_.batch = data_.dim(0);
    const size_t states = static_cast<size_t>(shape_.batch) * shape_.hidden;
    const float* h0 = carry_state_ && state_.size() == states ? state_.data() : nullptr;
    GruForward(shape_, srcs[0]->data().data(), h0, params_[0].value.data(), params_[1].value.data(),
               params_[2].value.data(), params_[3].value.data(), data_.data(), &tape_);
    if (!carry_state_) return;
    // Each row's last step's state: where the row's next batch begins.
    state_.resize(states);
    const size_t step = static_cast<size_t>(shape_.steps) * shape_.hidden;
    for (int b = 0; b < shape_.batch; ++b)
      std::copy_n(data_.data() + b * step + step - shape_.hidden, shape_.hidden,
                  state_.data() + b * shape_.hidden);
  }

  CarriedState carried_state() override {
    return carry_state_ ? CarriedState{&state_, static_cast<size_t>(shape_.hidden)} : CarriedState{};
  }

  void Backward(const std::vector<Layer*>& srcs) override {
    float* dx = srcs[0]->WantsGrad() ? srcs[0]->grad().data() : nullptr;
    GruBackward(shape_, srcs[0]->data().data(), data_.data(), params_[0].value.data(),
                params_[1].value.data(), &tape_, grad_.data(), dx, params_[0].grad.data(),
                params_[1].grad.data(), params_[2].grad.data(), params_[3].grad.data());
  }

  // Per step: the input and hidden products (2·3H·(I + H)) and the gates' arithmetic.
  double ForwardFlopsPerRecord() const override {
    return static_cast<double>(shape_.steps) *
           (6.0 * shape_.hidden * (shape_.input + shape_.hidden) + 12.0 * shape_.hidden);
  }
  // The input products run over every step's rows at once (ops/gru.cpp); the
  // hidden ones chain the steps: W_hh h forward, dh W_hh backward.
  double RowsPerRecord() const override { return shape_.steps; }
  double ChainedFlopsPerRecord() const override {
    return 2.0 * shape_.steps * (6.0 * shape_.hidden * shape_.hidden);
  }

 private:
  GruShape shape_;
  GruTape tape_;
  bool carry_state_ = false;
  std::vector<float> state_;  // [batch, hidden] with carry_state, once a pass has run; empty: zeros
};

}  // namespace

std::unique_ptr<Layer> NewGruLayer() { return std::make_unique<GruLayer>(); }

}  // namespace shoal
