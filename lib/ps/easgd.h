// Elastic averaging SGD (Zhang, Choromanska and LeCun, "Deep learning with
// Elastic Averaging SGD", 2015; DeepSpark's equation 1): the table is the
// centre c; workers train replicas of their own and now and then exchange.
// A worker's x and the centre are pulled toward each other by the elastic
// difference d = alpha·(x − c): the centre takes c + d, the worker x − d.
// alpha is the moving rate, in (0, 1). No gradients and no updater here.
#pragma once

#include <vector>

#include "ps/consistency.h"

namespace shoal {

// The centre's side: `x_then_diff` holds the worker's x and receives d;
// `centre` receives c + d. Both hold the same number of floats.
void ElasticExchange(float alpha, std::vector<float>* x_then_diff, std::vector<float>* centre);

class EasgdConsistency : public Consistency {
 public:
  EasgdConsistency(const ServerConfig& config, ServerStats*) : config_(config) {}
  void TakeUpdate(ServerTable&, int, int, uint64_t, const std::vector<const EntryView*>&) override {}
  // A rejoined worker repeating a step whose exchange was taken in gets a
  // difference of 0: it keeps its values and the centre is not pulled twice.
  Status Exchange(ServerTable& table, const MessageView& request, std::vector<std::vector<float>>* diffs,
                  bool* repeated) override;

 private:
  const ServerConfig& config_;
};

}  // namespace shoal
