#include "ps/consistency.h"

#include <iterator>

#include "ps/async.h"
#include "ps/bsp.h"
#include "ps/easgd.h"
#include "ps/ssp.h"

namespace shoal {
namespace {

template <typename Model>
std::unique_ptr<Consistency> New(const ServerConfig& config, ServerStats* stats) {
  return std::make_unique<Model>(config, stats);
}

// The models, in kConsistencyModels' order (config/choices.h).
using Make = std::unique_ptr<Consistency> (*)(const ServerConfig&, ServerStats*);
constexpr Make kModels[] = {New<BspConsistency>, New<AsyncConsistency>, New<SspConsistency>,
                            New<EasgdConsistency>};
static_assert(std::size(kModels) == std::size(kConsistencyModels), "every consistency model has its class");

}  // namespace

std::string WorkersNamed(const std::vector<int>& workers) {
  std::string names = workers.size() == 1 ? "worker " : "workers ";
  for (size_t i = 0; i < workers.size(); ++i) names += (i ? ", " : "") + std::to_string(workers[i]);
  return names;
}

uint64_t Consistency::TableVersion(const ServerTable& table) const {
  if (!table.layers().empty()) return table.SlowestLayer();
  uint64_t updates = 0;
  for (int w = 0; w < table.config().workers; ++w)
    if (table.config().serves[w]) updates += table.empty_steps()[w];
  return updates;
}

Status Consistency::Exchange(ServerTable&, const MessageView&, std::vector<std::vector<float>>*, bool*) {
  return Status::InvalidArgument("an exchange needs consistency 'easgd'");
}

std::unique_ptr<Consistency> MakeConsistency(const ServerConfig& config, ServerStats* stats) {
  return kModels[static_cast<size_t>(config.consistency)](config, stats);
}

}  // namespace shoal
