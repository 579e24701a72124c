#include "ps/easgd.h"

#include <cstddef>

namespace shoal {

void ElasticExchange(float alpha, std::vector<float>* x_then_diff, std::vector<float>* centre) {
  std::vector<float>& d = *x_then_diff;
  std::vector<float>& c = *centre;
  for (size_t i = 0; i < d.size(); ++i) {
    d[i] = alpha * (d[i] - c[i]);
    c[i] += d[i];
  }
}

Status EasgdConsistency::Exchange(ServerTable& table, const MessageView& req,
                                  std::vector<std::vector<float>>* diffs, bool* repeated) {
  std::vector<int> layers;
  const Status fits = table.CheckHeldSlices(req, &layers);
  if (!fits.ok()) return Status::InvalidArgument("exchange " + fits.message());
  const int sender = static_cast<int>(req.header.sender);
  const uint64_t step = req.header.step;
  *repeated = step < table.NextStepOf(sender, layers);
  diffs->clear();
  for (const auto& e : req.entries) {
    diffs->emplace_back(e.count, 0.0f);
    if (*repeated) continue;
    CopyValues(e, diffs->back().data());
    ElasticExchange(static_cast<float>(config_.easgd_alpha), &diffs->back(), &table.slice(e.key).value);
  }
  if (*repeated) return Status::Ok();
  for (int index : layers) {
    table.layers()[index].updates_from[sender] = step + 1;
    ++table.layers()[index].version;
  }
  if (layers.empty()) table.empty_steps()[sender] = step + 1;
  return Status::Ok();
}

}  // namespace shoal
