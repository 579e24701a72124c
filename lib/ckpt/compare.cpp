#include "ckpt/compare.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace shoal {

nlohmann::json SummarizeCheckpoint(const std::string& path, const Checkpoint& ckpt) {
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& t : ckpt.tensors) {
    double sq = 0.0;
    for (float v : t.data) sq += static_cast<double>(v) * v;
    tensors.push_back({{"name", t.name},
                       {"param", t.param},
                       {"role", t.role},
                       {"key", t.key},
                       {"shape", t.shape},
                       {"offset", t.offset},
                       {"count", t.data.size()},
                       {"l2_norm", std::sqrt(sq)}});
  }
  return {
      {"path", path},      {"plan_hash", ckpt.plan_hash}, {"server", ckpt.server}, {"servers", ckpt.servers},
      {"step", ckpt.step}, {"updates", ckpt.updates},     {"metric", ckpt.metric}, {"tensors", tensors}};
}

nlohmann::json DiffCheckpoints(const Checkpoint& a, const Checkpoint& b) {
  std::map<std::string, const CheckpointTensor*> in_b;
  for (const auto& t : b.tensors) in_b[t.name] = &t;
  nlohmann::json tensors = nlohmann::json::array(), only_a = nlohmann::json::array();
  double worst_abs = 0.0, worst_rel = 0.0, worst_l2 = 0.0;
  for (const auto& ta : a.tensors) {
    auto it = in_b.find(ta.name);
    if (it == in_b.end() || it->second->data.size() != ta.data.size()) {
      only_a.push_back(ta.name);
      continue;
    }
    const auto& tb = *it->second;
    double max_abs = 0.0, scale = 0.0, diff_sq = 0.0, norm_sq = 0.0;
    for (size_t i = 0; i < ta.data.size(); ++i) {
      const double d = static_cast<double>(ta.data[i]) - tb.data[i];
      max_abs = std::max(max_abs, std::fabs(d));
      scale = std::max(
          {scale, std::fabs(static_cast<double>(ta.data[i])), std::fabs(static_cast<double>(tb.data[i]))});
      diff_sq += d * d;
      norm_sq += static_cast<double>(ta.data[i]) * ta.data[i];
    }
    double max_rel = scale > 0 ? max_abs / scale : 0.0;
    // The whole tensor's relative change: one element that a ReLU or a max
    // pooling routed otherwise (a rounding-level tie) moves max_rel, not this.
    double rel_l2 = norm_sq > 0 ? std::sqrt(diff_sq / norm_sq) : std::sqrt(diff_sq);
    worst_abs = std::max(worst_abs, max_abs);
    worst_rel = std::max(worst_rel, max_rel);
    worst_l2 = std::max(worst_l2, rel_l2);
    tensors.push_back({{"name", ta.name}, {"max_abs", max_abs}, {"max_rel", max_rel}, {"rel_l2", rel_l2}});
    in_b.erase(it);
  }
  nlohmann::json only_b = nlohmann::json::array();
  for (const auto& [name, t] : in_b) only_b.push_back(name);
  return {{"step_a", a.step},   {"step_b", b.step},   {"max_abs", worst_abs}, {"max_rel", worst_rel},
          {"rel_l2", worst_l2}, {"tensors", tensors}, {"only_in_a", only_a},  {"only_in_b", only_b}};
}

}  // namespace shoal
