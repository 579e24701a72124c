#include "layers/layer.h"

#include <map>

#include "core/hash.h"

namespace shoal {

uint64_t Layer::StreamKey() const {
  const uint64_t pass = Mix64(Mix64(Mix64(draw_key_.seed) ^ draw_key_.step) ^ draw_key_.worker);
  return Mix64(pass ^ Fnv1a64(name_));
}

size_t Layer::param_count() const {
  size_t n = 0;
  for (const auto& p : params_) n += NumElements(p.shape);
  return n;
}

void Layer::Allocate(int batch) {
  Shape shape{batch};
  shape.insert(shape.end(), out_shape_.begin(), out_shape_.end());
  data_.Reshape(shape);
  grad_.Reshape(shape);
}

Param& Layer::AddParam(const std::string& suffix, Shape shape, ParamInit init) {
  Param p;
  p.name = name_ + "." + suffix;
  p.shape = shape;
  p.init = init;
  params_.push_back(std::move(p));
  return params_.back();
}

void Layer::AllocateParams() {
  for (Param& p : params_) {
    p.value = Tensor(p.shape);
    p.grad = Tensor(p.shape);
  }
}

Status RequireImageSource(const Fields& fields, const std::vector<const Layer*>& srcs) {
  if (srcs.size() != 1) return fields.Error("needs exactly one source layer");
  const Shape& in = srcs[0]->out_shape();
  if (in.size() != 3)
    return fields.Error("needs a [channels, height, width] source; '" + srcs[0]->name() + "' gives " +
                        ShapeToString(in));
  return Status::Ok();
}

std::vector<Layer*> PlanGradWrites(const std::vector<Layer*>& layers,
                                   const std::vector<std::vector<Layer*>>& srcs) {
  std::map<const Layer*, int> consumers;
  for (const auto& layer_srcs : srcs)
    for (const Layer* src : layer_srcs) ++consumers[src];
  std::vector<Layer*> cleared;
  std::map<const Layer*, bool> set;
  for (size_t i = 0; i < layers.size(); ++i) {
    std::vector<GradWrite> writes;
    for (const Layer* src : srcs[i]) {
      const bool sets = consumers[src] == 1 && layers[i]->CanSetSourceGrads();
      writes.push_back(sets ? GradWrite::kSet : GradWrite::kAdd);
      set[src] = sets;
    }
    layers[i]->set_source_grad_writes(std::move(writes));
  }
  for (Layer* layer : layers)
    if (layer->WantsGrad() && !set[layer]) cleared.push_back(layer);
  return cleared;
}

}  // namespace shoal
