// An embedding: the first `steps` values of its source's record are symbol
// ids in [0, vocab) (a char-RNN's characters), each mapped to its row of a
// [vocab, num_output] table: the feature is [steps, num_output]. An id out of
// range maps to zeros (dl-shard writes none). No gradient flows into the ids.
#include <algorithm>
#include <cmath>

#include "layers/layer_types.h"

namespace shoal {
namespace {

class EmbeddingLayer : public Layer {
 public:
  Status Setup(const Fields& fields, const std::vector<const Layer*>& srcs) override {
    if (srcs.size() != 1) return fields.Error("needs exactly one source layer (the ids)");
    SHOAL_RETURN_IF_ERROR(fields.RequiredInt("vocab", &vocab_, 1, kMaxUnits));
    SHOAL_RETURN_IF_ERROR(fields.RequiredInt("num_output", &width_, 1, kMaxUnits));
    const int record = static_cast<int>(std::min<size_t>(srcs[0]->feature_size(), kMaxUnits));
    SHOAL_RETURN_IF_ERROR(fields.Int("steps", record, &steps_, 1, record));
    record_ = static_cast<int>(srcs[0]->feature_size());
    out_shape_ = {steps_, width_};
    // PyTorch's nn.Embedding draws N(0, 1): a uniform of the same deviation.
    AddParam("weight", {vocab_, width_}, {ParamInit::Kind::kUniform, std::sqrt(3.0f)});
    return Status::Ok();
  }

  void Forward(Phase, const std::vector<Layer*>& srcs) override {
    const int batch = data_.dim(0);
    const float* ids = srcs[0]->data().data();
    const float* table = params_[0].value.data();
    for (int r = 0; r < batch; ++r)
      for (int t = 0; t < steps_; ++t) {
        float* out = data_.data() + (static_cast<size_t>(r) * steps_ + t) * width_;
        const long id = Id(ids[static_cast<size_t>(r) * record_ + t]);
        if (id < 0)
          std::fill(out, out + width_, 0.0f);
        else
          std::copy(table + id * width_, table + (id + 1) * width_, out);
      }
  }

  void Backward(const std::vector<Layer*>& srcs) override {
    const int batch = data_.dim(0);
    const float* ids = srcs[0]->data().data();
    float* dw = params_[0].grad.data();
    std::fill(dw, dw + params_[0].grad.size(), 0.0f);
    for (int r = 0; r < batch; ++r)
      for (int t = 0; t < steps_; ++t) {
        const long id = Id(ids[static_cast<size_t>(r) * record_ + t]);
        if (id < 0) continue;
        const float* dy = grad_.data() + (static_cast<size_t>(r) * steps_ + t) * width_;
        for (int k = 0; k < width_; ++k) dw[id * width_ + k] += dy[k];
      }
  }

  double ForwardFlopsPerRecord() const override { return static_cast<double>(steps_) * width_; }

 private:
  // The id a value names, or -1 when it names none.
  long Id(float v) const {
    const long id = std::lround(v);
    return std::isfinite(v) && id >= 0 && id < vocab_ ? id : -1;
  }

  int vocab_ = 0, width_ = 0, steps_ = 0, record_ = 0;
};

}  // namespace

std::unique_ptr<Layer> NewEmbeddingLayer() { return std::make_unique<EmbeddingLayer>(); }

}  // namespace shoal
