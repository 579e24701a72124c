#include "ps/consistency.h"

#include <cstring>
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

// The models, in kConsistencyNames' order (lib/config/job.h: what a job may name).
struct Registered {
  const char* name;
  std::unique_ptr<Consistency> (*make)(const ServerConfig&, ServerStats*);
};
constexpr Registered kConsistencies[] = {
    {"bsp", New<BspConsistency>},
    {"async", New<AsyncConsistency>},
    {"ssp", New<SspConsistency>},
    {"easgd", New<EasgdConsistency>},
};

constexpr bool SameNames() {
  if (std::size(kConsistencies) != std::size(kConsistencyNames)) return false;
  for (size_t i = 0; i < std::size(kConsistencies); ++i)
    for (size_t c = 0;; ++c) {
      if (kConsistencies[i].name[c] != kConsistencyNames[i][c]) return false;
      if (kConsistencies[i].name[c] == '\0') break;
    }
  return true;
}
static_assert(SameNames(),
              "every name a job may give cluster.consistency has its model here, in the same order");

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

std::string Consistency::Exchange(ServerTable&, const MessageView&, std::vector<std::vector<float>>*, bool*) {
  return std::string("an exchange needs consistency 'easgd'; this server runs '") + name() + "'";
}

std::unique_ptr<Consistency> MakeConsistency(const ServerConfig& config, ServerStats* stats) {
  for (const auto& c : kConsistencies)
    if (config.consistency == c.name) return c.make(config, stats);
  return nullptr;  // ParseJob refuses every other name
}

}  // namespace shoal
