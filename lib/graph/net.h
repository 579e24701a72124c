// A neural net built from a job's layer list: a graph whose edges are each
// layer's srclayers, run in topological order. The planner reads its layers'
// cost facts; the partitioned runtime (lib/net) builds each worker's part.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/job.h"
#include "layers/data_layer.h"
#include "layers/layer.h"
#include "layers/loss_layer.h"

namespace shoal {

// Builds one layer of a job from `fields` (its mapping in the job, or a copy
// with fields changed) and its sources: known type, setup, no unknown field.
// `resolved` (may be null) receives the fields as the layer read them,
// defaults included.
Status BuildLayer(const JobConfig& job, const LayerConfig& config, const nlohmann::json& fields,
                  const std::vector<const Layer*>& srcs, bool allocate_params, std::unique_ptr<Layer>* layer,
                  nlohmann::json* resolved = nullptr);

// The most floats one parameter, and one record's feature of one layer, may hold.
inline constexpr size_t kMaxParamFloats = size_t{1} << 30;    // 4 GiB
inline constexpr size_t kMaxFeatureFloats = size_t{1} << 26;  // 256 MiB a record

class Net {
 public:
  // Sets every layer up (shapes, parameters) and checks the graph: known
  // types, known sources, no cycles, one data layer, one loss layer, an RBM loss
  // with train.algorithm cd and none other.
  // `allocate_params`: false for a net that is only planned (shapes, costs).
  static Status Build(const JobConfig& job, std::unique_ptr<Net>* net, bool allocate_params = true);

  // Shapes every feature for batches of `batch` records.
  void Allocate(int batch);
  int batch() const { return batch_; }

  void Forward(Phase phase);
  // Clears all gradients, then back-propagates from the loss.
  void Backward();

  // Whether a layer carries state from one pass to the next (a GRU with
  // carry_state), and forgetting it all.
  bool CarriesState() const;
  void ResetState();
  // Every carrying layer's state, in the net's order.
  std::vector<CarriedState> CarriedStates();

  DataLayer& data_layer() { return *data_; }
  LossLayer& loss_layer() { return *loss_; }
  // The first layer that sums over every worker's batch (a batch norm with
  // sync), or "" when none does.
  std::string SyncingLayer() const;
  const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }
  const std::vector<Layer*>& sources(size_t layer) const { return srcs_[layer]; }
  // Every parameter, in layer order.
  std::vector<Param*> params();
  // The job's resolved form with every layer's fields as read, defaults
  // included, in the job's order: what a plan embeds.
  nlohmann::json ResolvedJob(const JobConfig& job) const;

 private:
  std::vector<std::unique_ptr<Layer>> layers_;      // topological order
  std::vector<std::vector<Layer*>> srcs_;           // sources of layers_[i]
  std::vector<Layer*> cleared_;                     // gradients cleared before Backward (PlanGradWrites)
  std::map<std::string, nlohmann::json> resolved_;  // by layer name: its fields as read
  DataLayer* data_ = nullptr;
  LossLayer* loss_ = nullptr;
  int batch_ = 0;
};

}  // namespace shoal
