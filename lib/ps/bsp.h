// Bulk synchronous parallel (SINGA's Sandblaster and AllReduce): a layer's
// update of step t is summed until every worker holding it has sent it, then
// averaged and applied once (version t -> t+1); a read of version v waits
// until the layers it reads reach it. With gradients averaged over workers,
// W workers × batch B step exactly as one worker × batch W·B.
//
// Gradients are summed in worker order whatever order they arrive in (early
// arrivals wait), so a run's result does not depend on timing. Each layer is
// applied as soon as its step is complete, while the workers still compute
// the layers below (train.overlap), but never more than one version ahead of
// the table's, so the table's version — its slowest layer's — names one
// consistent state for gets, joins and checkpoints. A worker holding nothing
// here still takes part in every step with an empty update, as a barrier.
#pragma once

#include <map>
#include <vector>

#include "ps/consistency.h"

namespace shoal {

// Bulk synchronous parallel: each layer's step is applied once every worker holding it has sent it.
class BspConsistency : public Consistency {
 public:
  BspConsistency(const ServerConfig& config, ServerStats* stats);
  // A worker sends a layer's step s once it has version s of the layer.
  // InvalidArgument for a step past the least version of its layers.
  Status CheckUpdate(const ServerTable& table, int worker, uint64_t step,
                     const std::vector<int>& layers) const override;
  // The step is applied already, or this worker's share of it is in.
  bool Repeated(const ServerTable& table, int index, int worker, uint64_t step) const override;
  void TakeUpdate(ServerTable& table, int index, int worker, uint64_t step,
                  const std::vector<const EntryView*>& entries) override;
  void AfterUpdate(ServerTable& table, const std::function<void()>& catch_up) override;
  // The slowest layer, and the workers exchanging nothing here (holding nothing, or only frozen slices) (a
  // step's barrier too).
  uint64_t TableVersion(const ServerTable& table) const override;
  bool Ready(const ServerTable& table, const Read& read) const override;
  // No worker waits for more than the version after the table's.
  // InvalidArgument for a read past it.
  Status CheckRead(const ServerTable& table, const Read& read) const override;
  void OnPark(const Read& read) override;
  // The first layer the read needs whose step lacks some workers' gradients
  // (else any layer holding the table back, else a worker holding nothing
  // here whose empty update has not come).
  std::string Awaited(const ServerTable& table, const Read& read) const override;
  // Every worker trains the table's current step.
  uint64_t JoinStep(const ServerTable& table, int worker) const override { return table.version(); }
  // A layer a version past `step` answers with the values it had before its
  // last update: a worker that died between its sends to two servers rejoins
  // where the slower one is, and repeats the step on exactly the values it
  // had, whatever the faster server has applied since.
  const std::vector<float>* ValuesAt(const ServerTable& table, uint32_t key, uint64_t step) const override;

 private:
  // A worker's gradients that came before their turn to be summed, kept
  // until it; the buffers stay from step to step (a step's are the sizes of
  // the last's), only the first `used` hold this step's.
  struct Waiting {
    std::vector<std::pair<uint32_t, std::vector<float>>> grads;
    size_t used = 0;
  };
  // One layer's current step: whose update arrived, summed in worker order.
  struct Step {
    std::vector<bool> contributed;
    int contributors = 0;
    int next_to_sum = 0;
    std::vector<Waiting> waiting;  // per worker
  };
  // Sums the gradients waiting in worker order as far as they go.
  void SumInOrder(ServerTable& table, int index);
  // Layer `index`'s next step: nothing in yet.
  void NextStep(int index);
  // Whether layer `index`'s step is complete (every holder's gradient in)
  // and may apply now (the layer is at the table's version).
  bool Applicable(const ServerTable& table, int index) const;
  // Whether no worker after `worker` holds some of layer `index` (its gradient is the last summed).
  bool LastToSum(int index, int worker) const;
  // Applies layer `index`'s complete step: its sums, plus `last` (the last
  // worker's gradients in its message, key order; none when all are summed).
  void ApplyStep(ServerTable& table, int index, const std::vector<const EntryView*>& last);

  const ServerConfig& config_;
  ServerStats* stats_;
  std::vector<Step> steps_;                          // per layer
  std::map<uint32_t, std::vector<float>> previous_;  // per key: its values before the last update
};

}  // namespace shoal
