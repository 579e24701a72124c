#include "ps/bsp.h"

#include <algorithm>

namespace shoal {

BspConsistency::BspConsistency(const ServerConfig& config, ServerStats* stats)
    : config_(config), stats_(stats), steps_(config.layers.size()) {
  for (size_t index = 0; index < steps_.size(); ++index) NextStep(static_cast<int>(index));
}

void BspConsistency::NextStep(int index) {
  Step& s = steps_[index];
  s.contributed.assign(config_.workers, false);
  s.contributors = 0;
  s.waiting.resize(config_.workers);
  for (Waiting& w : s.waiting) w.used = 0;
  // The first worker to sum: past the ones that hold none of the layer.
  const LayerSpec& spec = config_.layers[index];
  for (s.next_to_sum = 0; s.next_to_sum < config_.workers && spec.held[s.next_to_sum].empty();)
    ++s.next_to_sum;
}

Status BspConsistency::CheckUpdate(const ServerTable& table, int worker, uint64_t step,
                                   const std::vector<int>& layers) const {
  const uint64_t version = table.VersionOf(layers);
  if (step <= version) return Status::Ok();
  const std::string what = layers.empty()       ? "the table is"
                           : layers.size() == 1 ? "layer '" + table.layers()[layers[0]].spec->name + "' is"
                                                : "its layers are";
  return Status::InvalidArgument("update for step " + std::to_string(step) + " but " + what + " at version " +
                                 std::to_string(version));
}

bool BspConsistency::Repeated(const ServerTable& table, int index, int worker, uint64_t step) const {
  return step < table.layers()[index].version || steps_[index].contributed[worker];
}

void BspConsistency::TakeUpdate(ServerTable& table, int index, int worker, uint64_t step,
                                const std::vector<const EntryView*>& entries) {
  Step& s = steps_[index];
  s.contributed[worker] = true;
  ++s.contributors;
  if (worker == s.next_to_sum) {
    if (LastToSum(index, worker) && Applicable(table, index)) {
      ApplyStep(table, index, entries);  // the step's last gradient goes into the update as it is read
      return;
    }
    table.AddGradients(entries);
    ++s.next_to_sum;
  } else {
    Waiting& w = s.waiting[worker];
    for (const EntryView* e : entries) {
      if (w.used == w.grads.size()) w.grads.emplace_back();
      auto& [key, grad] = w.grads[w.used++];
      key = e->key;
      grad.resize(e->count);
      CopyValues(*e, grad.data());
    }
  }
  SumInOrder(table, index);
}

void BspConsistency::SumInOrder(ServerTable& table, int index) {
  Step& s = steps_[index];
  const LayerSpec& spec = *table.layers()[index].spec;
  for (; s.next_to_sum < config_.workers; ++s.next_to_sum) {
    const int w = s.next_to_sum;
    if (spec.held[w].empty()) continue;  // nothing of this layer to wait for
    if (!s.contributed[w]) return;
    Waiting& waiting = s.waiting[w];
    for (size_t i = 0; i < waiting.used; ++i) {
      const auto& [key, grad] = waiting.grads[i];
      table.AddToSum(key, grad.data(), grad.size());
    }
    waiting.used = 0;
  }
}

void BspConsistency::AfterUpdate(ServerTable& table, const std::function<void()>& catch_up) {
  // A layer whose step is complete waits for the table's version before it
  // applies, so no layer runs more than one version ahead; the table's
  // version moving on (a layer applied here or as its last gradient came)
  // opens the way for the ones waiting behind it: hence the loop.
  for (;;) {
    for (size_t index = 0; index < table.layers().size(); ++index)
      if (Applicable(table, static_cast<int>(index))) ApplyStep(table, static_cast<int>(index), {});
    const uint64_t version = table.version();
    catch_up();
    if (table.version() == version) return;
  }
}

bool BspConsistency::Applicable(const ServerTable& table, int index) const {
  const ServerTable::Layer& layer = table.layers()[index];
  return layer.spec->holders > 0 && steps_[index].contributors == layer.spec->holders &&
         layer.version == table.version();
}

bool BspConsistency::LastToSum(int index, int worker) const {
  const LayerSpec& spec = config_.layers[index];
  for (int w = worker + 1; w < config_.workers; ++w)
    if (!spec.held[w].empty()) return false;
  return true;
}

void BspConsistency::ApplyStep(ServerTable& table, int index, const std::vector<const EntryView*>& last) {
  ServerTable::Layer& layer = table.layers()[index];
  size_t next = 0;  // `last` is in key order, as the layer's keys are
  for (uint32_t key : layer.spec->keys) {
    const EntryView* mine = next < last.size() && last[next]->key == key ? last[next++] : nullptr;
    table.Apply(table.slice(key), 1.0f / config_.served, layer.version, &previous_[key], mine);
  }
  ++layer.version;
  NextStep(index);
}

uint64_t BspConsistency::TableVersion(const ServerTable& table) const {
  uint64_t slowest = table.SlowestLayer();
  for (int w = 0; w < config_.workers; ++w)
    if (config_.serves[w] && config_.exchanged[w].empty())
      slowest = std::min(slowest, table.empty_steps()[w]);
  return slowest;
}

const std::vector<float>* BspConsistency::ValuesAt(const ServerTable& table, uint32_t key,
                                                   uint64_t step) const {
  if (table.Frozen(key)) return &table.slices().at(key).value;  // the same at every step
  const ServerTable::Layer& layer = table.layers()[table.LayerOf(key)];
  if (layer.version == step) return &table.slices().at(key).value;
  auto before = previous_.find(key);
  if (layer.version == step + 1 && before != previous_.end()) return &before->second;
  return nullptr;
}

Status BspConsistency::CheckRead(const ServerTable& table, const Read& read) const {
  const uint64_t version = table.VersionOf(read.layers);
  if (read.at <= version + 1) return Status::Ok();
  return Status::InvalidArgument("a read of version " + std::to_string(read.at) + " while the table is at " +
                                 std::to_string(version) +
                                 ": no worker waits for more than the next version");
}

bool BspConsistency::Ready(const ServerTable& table, const Read& read) const {
  return read.at <= table.VersionOf(read.layers);
}

std::string BspConsistency::Awaited(const ServerTable& table, const Read& read) const {
  auto lacking = [&](int index) -> std::string {
    const ServerTable::Layer& layer = table.layers()[index];
    const Step& s = steps_[index];
    std::vector<int> missing;
    for (int w = 0; w < config_.workers; ++w)
      if (!layer.spec->held[w].empty() && !s.contributed[w]) missing.push_back(w);
    if (missing.empty()) return "";
    return "layer '" + layer.spec->name + "' has step " + std::to_string(layer.version) + " from " +
           std::to_string(s.contributors) + " of its " + std::to_string(layer.spec->holders) +
           " workers: not from " + WorkersNamed(missing);
  };
  for (int index : read.layers)
    if (table.layers()[index].version < read.at)
      if (std::string why = lacking(index); !why.empty()) return why;
  for (size_t index = 0; index < table.layers().size(); ++index)
    if (table.layers()[index].version <= table.version())
      if (std::string why = lacking(static_cast<int>(index)); !why.empty()) return why;
  std::vector<int> empty;
  for (int w = 0; w < config_.workers; ++w)
    if (config_.serves[w] && config_.exchanged[w].empty() && table.empty_steps()[w] <= table.version())
      empty.push_back(w);
  if (empty.empty()) return "";
  return "the step " + std::to_string(table.version()) + " of " + WorkersNamed(empty) +
         ", which exchanges nothing here, has not come";
}

void BspConsistency::OnPark(const Read& read) {
  if (read.worker < 0) ++stats_->gets_waited;
}

}  // namespace shoal
