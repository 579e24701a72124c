#include "ps/table.h"

#include <algorithm>

#include "ps/param_init.h"

namespace shoal {

ServerTable::ServerTable(const ServerConfig& config, bool takes_gradients)
    : config_(config),
      takes_gradients_(takes_gradients),
      held_layers_(config.workers),
      empty_steps_(config.workers, 0),
      done_(config.workers, false) {
  // Each parameter's values are made whole once, then cut into its slices here.
  std::string param;
  std::vector<float> full;
  for (const SliceSpec& spec : config.slices) {
    if (spec.param != param) {
      param = spec.param;
      Status init = InitialValues(spec.param, spec.shape, spec.init, config.seed, &full);
      if (!init.ok()) {
        if (init_status_.ok()) init_status_ = init;  // the first parameter that failed
        full.assign(NumElements(spec.shape), 0.0f);
      }
    }
    const UpdaterConfig updater = UpdaterOfParam(config.updater, spec.lr_mult, spec.role);
    Slice s{&spec,
            std::vector<float>(full.begin() + spec.offset, full.begin() + spec.offset + spec.count),
            {},
            {},
            updater};
    if (takes_gradients) {
      // A frozen slice's state stays zero, for checkpoints of one layout whatever lr_mult says.
      if (!spec.frozen()) s.grad_sum.assign(spec.count, 0.0f);
      s.state = NewUpdaterState(config.updater, spec.count);
    }
    slices_.emplace(spec.key, std::move(s));
  }
  for (size_t i = 0; i < config.layers.size(); ++i) {
    const LayerSpec& spec = config.layers[i];
    layers_.push_back({&spec, 0, std::vector<uint64_t>(config.workers, 0)});
    for (uint32_t key : spec.keys) layer_of_[key] = static_cast<int>(i);
    for (int w = 0; w < config.workers; ++w)
      if (!spec.held[w].empty()) held_layers_[w].push_back(static_cast<int>(i));
  }
}

const std::vector<std::string>& ServerTable::state_names() const {
  static const std::vector<std::string> kNone;
  return takes_gradients_ ? UpdaterStateNames(config_.updater.rule) : kNone;
}

uint64_t ServerTable::VersionOf(const std::vector<int>& layers) const {
  if (layers.empty()) return version_;
  uint64_t version = ~0ull;
  for (int index : layers) version = std::min(version, layers_[index].version);
  return version;
}

uint64_t ServerTable::SlowestLayer() const {
  uint64_t slowest = ~0ull;
  for (const Layer& layer : layers_) slowest = std::min(slowest, layer.version);
  return slowest;
}

std::string ServerTable::LayerAhead() const {
  for (const Layer& layer : layers_)
    if (layer.version != version_)
      return "layer '" + layer.spec->name + "' is at version " + std::to_string(layer.version) +
             ", the table at " + std::to_string(version_);
  return "";
}

uint64_t ServerTable::NextStepOf(int worker, const std::vector<int>& layers) const {
  if (layers.empty()) return empty_steps_[worker];
  uint64_t next = ~0ull;
  for (int index : layers) next = std::min(next, layers_[index].updates_from[worker]);
  return next;
}

uint64_t ServerTable::NextStepOf(int worker) const { return NextStepOf(worker, held_layers_[worker]); }

std::vector<uint64_t> ServerTable::NextSteps() const {
  std::vector<uint64_t> steps;
  for (size_t w = 0; w < held_layers_.size(); ++w) steps.push_back(NextStepOf(static_cast<int>(w)));
  return steps;
}

Status ServerTable::CheckSlices(const MessageView& req) const {
  for (const auto& e : req.entries) {
    auto it = slices_.find(e.key);
    if (it == slices_.end() || it->second.value.size() != e.count)
      return Status::InvalidArgument("slice " + std::to_string(e.key) + " of " + std::to_string(e.count) +
                                     " floats does not match this server's table");
  }
  return Status::Ok();
}

Status ServerTable::CheckHeldSlices(const MessageView& req, std::vector<int>* layers) const {
  const uint32_t sender = req.header.sender;
  layers->clear();
  SHOAL_RETURN_IF_ERROR(CheckSlices(req));  // every key is this server's from here on
  for (const auto& e : req.entries) {
    if (Frozen(e.key))
      return Status::InvalidArgument("from worker " + std::to_string(sender) + " carries slice " +
                                     std::to_string(e.key) + " of '" + slices_.at(e.key).spec->param +
                                     "', which is frozen (lr_mult 0): nothing is sent of it");
    const int index = layer_of_.at(e.key);
    if (layers->empty() || layers->back() != index) layers->push_back(index);
  }
  if (layers->empty()) {
    if (config_.exchanged[sender].empty()) return Status::Ok();
    return Status::InvalidArgument("from worker " + std::to_string(sender) +
                                   " carries no slices; the plan gives it " +
                                   std::to_string(config_.exchanged[sender].size()) + " on this server");
  }
  // Layers' keys follow one another, so the slices expected are each
  // touched layer's in turn.
  std::vector<uint32_t> expected;
  std::string names;
  for (int index : *layers) {
    const std::vector<uint32_t>& keys = layers_[index].spec->held[sender];
    expected.insert(expected.end(), keys.begin(), keys.end());
    names += (names.empty() ? "'" : ", '") + layers_[index].spec->name + "'";
  }
  bool same = req.entries.size() == expected.size();
  for (size_t i = 0; same && i < expected.size(); ++i) same = req.entries[i].key == expected[i];
  if (same) return Status::Ok();
  return Status::InvalidArgument(
      "from worker " + std::to_string(sender) + " carries " + std::to_string(req.entries.size()) +
      " slices of layer " + names + "; the plan gives it " + std::to_string(expected.size()) +
      " of them on this server (a request carries every slice it holds of each layer it touches)");
}

std::vector<const EntryView*> ServerTable::EntriesOf(const MessageView& req, int index) const {
  std::vector<const EntryView*> entries;
  for (const auto& e : req.entries)
    if (layer_of_.at(e.key) == index) entries.push_back(&e);
  return entries;
}

void ServerTable::AddGradients(const std::vector<const EntryView*>& entries) {
  // fp32 sums whatever the wire carried.
  for (const EntryView* e : entries) {
    Slice& s = slices_.at(e->key);
    AddValues(*e, s.grad_sum.data());
    s.sum_is_zero = false;
  }
}

void ServerTable::AddToSum(uint32_t key, const float* grad, size_t n) {
  Slice& s = slices_.at(key);
  for (size_t i = 0; i < n; ++i) s.grad_sum[i] += grad[i];
  s.sum_is_zero = false;
}

void ServerTable::Apply(Slice& s, float scale, uint64_t version, std::vector<float>* before,
                        const EntryView* last) {
  if (last && last->encoding != ValueEncoding::kF32) {  // halves are widened on their own
    AddGradients({last});
    last = nullptr;
  }
  const GradientSum grad{s.grad_sum.data(), s.sum_is_zero, last ? last->data : nullptr, scale};
  const size_t n = s.value.size();
  float* updated = s.value.data();
  if (before) {
    before->resize(n);
    updated = before->data();
  }
  // The request is the server's own (lib/comm/rpc_server.cpp): its gradient, once read, may be written over.
  // (Only where replies carry fp32: with fp16 on the wire the reply's halves lie elsewhere.)
  unsigned char* also_into = into_request_ && last && config_.wire == ValueEncoding::kF32
                                 ? const_cast<unsigned char*>(last->data)
                                 : nullptr;
  s.also_at = also_into;
  s.also_at_request = also_into ? request_ : 0;
  ApplySumUpdate(s.updater, version, n, grad, s.value.data(), updated, &s.state, also_into);
  if (before) s.value.swap(*before);
  s.sum_is_zero = true;
}

}  // namespace shoal
