#include "graph/net.h"

#include <map>

#include "graph/param_fields.h"

namespace shoal {

namespace {

Fields LayerFields(const JobConfig& job, const LayerConfig& cfg, const nlohmann::json& node) {
  return Fields(node, job.origin, cfg.pointer, "layer '" + cfg.name + "'");
}

}  // namespace

Status BuildLayer(const JobConfig& job, const LayerConfig& cfg, const nlohmann::json& node,
                  const std::vector<const Layer*>& srcs, bool allocate_params, std::unique_ptr<Layer>* out,
                  nlohmann::json* resolved) {
  Fields fields = LayerFields(job, cfg, node);
  // The fields every layer has (lib/config/job.h checked them), as they were read.
  fields.Has("name");
  fields.Keep("name", cfg.name);
  fields.Has("type");
  fields.Keep("type", cfg.type);
  if (fields.Has("srclayers")) fields.Keep("srclayers", cfg.srclayers);
  if (fields.Has("partition_dim")) fields.Keep("partition_dim", cfg.partition_dim);
  if (fields.Has("location")) fields.Keep("location", cfg.location);
  auto layer = CreateLayer(cfg.type);
  if (!layer) {
    std::string known;
    for (const auto& t : LayerTypes()) known += (known.empty() ? "" : ", ") + t;
    return fields.FieldError("type", "is '" + cfg.type + "', not a layer type (known: " + known + ")");
  }
  layer->Init(cfg.name, cfg.type);
  SHOAL_RETURN_IF_ERROR(layer->Setup(fields, srcs));
  SHOAL_RETURN_IF_ERROR(ReadParamFields(fields, layer.get()));
  SHOAL_RETURN_IF_ERROR(fields.CheckNoUnknown());
  // Bounded before a float is allocated (docs/job-file.md).
  if (layer->feature_size() > kMaxFeatureFloats)
    return fields.Error("its feature is " + std::to_string(layer->feature_size()) + " floats a record (" +
                        ShapeToString(layer->out_shape()) + "); at most " +
                        std::to_string(kMaxFeatureFloats));
  for (const Param& p : layer->params())
    if (NumElements(p.shape) > kMaxParamFloats)
      return fields.Error("parameter '" + p.name + "' " + ShapeToString(p.shape) + " is " +
                          std::to_string(NumElements(p.shape)) + " floats; at most " +
                          std::to_string(kMaxParamFloats));
  if (allocate_params) layer->AllocateParams();
  if (resolved) *resolved = fields.resolved();
  *out = std::move(layer);
  return Status::Ok();
}

Status Net::Build(const JobConfig& job, std::unique_ptr<Net>* out, bool allocate_params) {
  auto net = std::unique_ptr<Net>(new Net());
  const auto& configs = job.layers;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < configs.size(); ++i) index[configs[i].name] = i;

  // Kahn's algorithm, taking ready layers in file order so the order is stable.
  std::vector<int> pending(configs.size(), 0);
  for (size_t i = 0; i < configs.size(); ++i) {
    Fields f = LayerFields(job, configs[i], configs[i].fields);
    for (const auto& src : configs[i].srclayers) {
      if (!index.count(src)) return f.FieldError("srclayers", "names unknown layer '" + src + "'");
      if (src == configs[i].name) return f.FieldError("srclayers", "names the layer itself");
    }
    pending[i] = static_cast<int>(configs[i].srclayers.size());
  }
  std::vector<bool> done(configs.size(), false);
  std::map<std::string, Layer*> built;
  for (size_t placed = 0; placed < configs.size(); ++placed) {
    size_t next = configs.size();
    for (size_t i = 0; i < configs.size() && next == configs.size(); ++i)
      if (!done[i] && pending[i] == 0) next = i;
    if (next == configs.size()) {
      for (size_t i = 0; i < configs.size(); ++i)
        if (!done[i])
          return LayerFields(job, configs[i], configs[i].fields)
              .FieldError("srclayers", "is part of a cycle");
    }
    const LayerConfig& cfg = configs[next];
    Fields fields = LayerFields(job, cfg, cfg.fields);
    std::vector<const Layer*> const_srcs;
    std::vector<Layer*> srcs;
    for (const auto& s : cfg.srclayers) {
      srcs.push_back(built.at(s));
      const_srcs.push_back(built.at(s));
    }
    std::unique_ptr<Layer> layer;
    SHOAL_RETURN_IF_ERROR(
        BuildLayer(job, cfg, cfg.fields, const_srcs, allocate_params, &layer, &net->resolved_[cfg.name]));
    if (auto* d = dynamic_cast<DataLayer*>(layer.get())) {
      if (net->data_)
        return fields.Error("a net has one data layer; '" + net->data_->name() + "' is the first");
      net->data_ = d;
    }
    if (auto* l = dynamic_cast<LossLayer*>(layer.get())) {
      if (net->loss_)
        return fields.Error("a net has one loss layer; '" + net->loss_->name() + "' is the first");
      net->loss_ = l;
    }
    built[cfg.name] = layer.get();
    done[next] = true;
    for (size_t i = 0; i < configs.size(); ++i)
      for (const auto& s : configs[i].srclayers)
        if (s == cfg.name) --pending[i];
    net->layers_.push_back(std::move(layer));
    net->srcs_.push_back(std::move(srcs));
  }
  if (!net->data_) return Status::InvalidArgument(job.source + ": the model has no layer of type 'data'");
  if (!net->loss_)
    return Status::InvalidArgument(job.source +
                                   ": the model has no loss layer (type 'softmax_loss' or 'rbm')");
  // An RBM has no back-propagated gradient, and contrastive divergence
  // needs one to sample from: the algorithm and the loss layer go together.
  const bool rbm = net->loss_->type() == "rbm";
  if (rbm != (job.train.algorithm == Algorithm::kCd))
    return Status::InvalidArgument(
        job.source + ": train.algorithm is '" + Name(job.train.algorithm) + "' but the loss layer '" +
        net->loss_->name() + "' is of type '" + net->loss_->type() + "' (" +
        (rbm ? "an RBM trains by contrastive divergence: set train.algorithm: cd"
             : "contrastive divergence trains an RBM: the loss layer must be of type 'rbm'") +
        ")");
  std::vector<Layer*> layers;
  for (auto& layer : net->layers_) layers.push_back(layer.get());
  net->cleared_ = PlanGradWrites(layers, net->srcs_);
  *out = std::move(net);
  return Status::Ok();
}

void Net::Allocate(int batch) {
  if (batch == batch_) return;
  batch_ = batch;
  for (auto& layer : layers_) layer->Allocate(batch);
  data_->labels().resize(batch);
}

void Net::Forward(Phase phase) {
  for (size_t i = 0; i < layers_.size(); ++i) layers_[i]->Forward(phase, srcs_[i]);
}

void Net::Backward() {
  // Layers set their parameters' gradients, and their sources' where they
  // are the only consumer; the other sources' gradients are summed into.
  for (Layer* layer : cleared_) layer->grad().Fill(0.0f);
  for (size_t i = layers_.size(); i-- > 0;) layers_[i]->Backward(srcs_[i]);
}

nlohmann::json Net::ResolvedJob(const JobConfig& job) const {
  nlohmann::json j = job.resolved;
  nlohmann::json& layers = j["model"]["layers"];
  layers = nlohmann::json::array();
  for (const auto& cfg : job.layers) layers.push_back(resolved_.at(cfg.name));
  return j;
}

bool Net::CarriesState() const {
  for (const auto& layer : layers_)
    if (layer->CarriesState()) return true;
  return false;
}

std::string Net::SyncingLayer() const {
  for (const auto& layer : layers_)
    if (layer->GroupExchangePerStep().rounds > 0) return layer->name();
  return "";
}

void Net::ResetState() {
  for (auto& layer : layers_) layer->ResetState();
}

std::vector<CarriedState> Net::CarriedStates() {
  std::vector<CarriedState> states;
  for (auto& layer : layers_)
    if (CarriedState s = layer->carried_state(); s.floats) states.push_back(s);
  return states;
}

std::vector<Param*> Net::params() {
  std::vector<Param*> all;
  for (auto& layer : layers_)
    for (auto& p : layer->params()) all.push_back(&p);
  return all;
}

}  // namespace shoal
