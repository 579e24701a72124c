// Concatenation along the first per-record axis (channels for [C,H,W]): the
// join of inception-style branches. Every source must agree on the other axes.
#include <algorithm>

#include "layers/layer_types.h"
#include "ops/elementwise.h"

namespace shoal {
namespace {

class ConcatLayer : public Layer {
 public:
  Status Setup(const Fields& fields, const std::vector<const Layer*>& srcs) override {
    if (srcs.empty()) return fields.Error("needs at least one source layer");
    const Shape& first = srcs[0]->out_shape();
    int channels = 0;
    for (const Layer* src : srcs) {
      const Shape& s = src->out_shape();
      if (s.size() != first.size() || !std::equal(s.begin() + 1, s.end(), first.begin() + 1))
        return fields.FieldError("srclayers", "'" + src->name() + "' gives " + ShapeToString(s) +
                                                  ", which does not match '" + srcs[0]->name() + "' " +
                                                  ShapeToString(first) + " beyond the first axis");
      channels += s[0];
      sizes_.push_back(src->feature_size());
    }
    out_shape_ = first;
    out_shape_[0] = channels;
    return Status::Ok();
  }

  // Per record, the sources' features one after another.
  void Forward(Phase, const std::vector<Layer*>& srcs) override {
    size_t at = 0;
    for (size_t k = 0; k < srcs.size(); ++k) {
      CopyRows(data_.dim(0), sizes_[k], srcs[k]->data().data(), sizes_[k], data_.data() + at, feature_size(),
               GradWrite::kSet);
      at += sizes_[k];
    }
  }

  void Backward(const std::vector<Layer*>& srcs) override {
    size_t at = 0;
    for (size_t k = 0; k < srcs.size(); ++k) {
      if (srcs[k]->WantsGrad())
        CopyRows(data_.dim(0), sizes_[k], grad_.data() + at, feature_size(), srcs[k]->grad().data(),
                 sizes_[k], SourceGradWrite(k));
      at += sizes_[k];
    }
  }
  bool CanSetSourceGrads() const override { return true; }
  bool RunsOnGpu() const override { return true; }

  // A partition of the output by channels is a partition of each source by channels.
  Dependency SourceDependency(size_t) const override { return Dependency::kElementwise; }

 private:
  std::vector<size_t> sizes_;  // floats per record of each source
};

}  // namespace

std::unique_ptr<Layer> NewConcatLayer() { return std::make_unique<ConcatLayer>(); }

}  // namespace shoal
