// The part of a plan's net that one worker runs (SINGA §5.3): its layers as
// the plan partitions them within its group — whole on its own records, a
// range of the outputs on the group's records, or nothing — joined by the
// connection layers that move features between the group's workers.
// In a group of one it is the whole net.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "comm/group_channel.h"
#include "comm/group_sum.h"
#include "device/step_memory.h"
#include "graph/net.h"
#include "layers/data_layer.h"
#include "layers/loss_layer.h"
#include "net/connection_layer.h"
#include "net/placement.h"
#include "ops/gpu_ops.h"
#include "plan/plan.h"

namespace shoal {

// What runs beside each layer's passes: a worker's parameter traffic when it
// overlaps communication with computation (SINGA §5.3's get, collect and
// update; lib/train/param_table.h's RemoteTable with train.overlap).
class LayerHooks {
 public:
  virtual ~LayerHooks() = default;
  // Just before the layer's forward pass: its parameters must be there.
  virtual Status BeforeForward(const Layer& layer) = 0;
  // Just after its backward pass: its parameters' gradients are ready.
  virtual Status AfterBackward(const Layer& layer, uint64_t step) = 0;
};

// Worker `worker`'s group as its channel needs it: the peers' endpoints in
// rank order, and the largest block a peer may send (a whole feature of the
// group's records).
GroupPeers GroupPeersOf(const Plan& plan, int worker, int timeout_ms);
// Every worker of a plan of groups of one, as one group: where a layer sums
// over all their batches (Net::SyncingLayer).
GroupPeers AllWorkersOf(const Plan& plan, int worker, int timeout_ms);

class PartitionedNet {
 public:
  // `channel`: open, to worker `worker`'s group; in groups of one, to every
  // worker where a layer sums over them, else null.
  static Status Build(const Plan& plan, int worker, GroupChannel* channel,
                      std::unique_ptr<PartitionedNet>* net);

  // Shapes every feature for `batch` records per worker.
  void Allocate(int batch);
  // Both passes of step `step`; they fail when a peer's part never comes, or
  // when a hook fails. `hooks` (may be null) runs beside every layer.
  Status Forward(Phase phase, uint64_t step, LayerHooks* hooks = nullptr);
  Status Backward(uint64_t step, LayerHooks* hooks = nullptr);

  // The operation sequence of one training step (lib/device/step_ops.h):
  // each layer's forward pass, then each backward pass in reverse, with the
  // features, feature gradients, parameter values and gradients they touch.
  StepOps TrainingStepOps();
  // Runs the training passes on the device memory `memory` manages (built
  // from TrainingStepOps(); null: in host memory, as without it), computing
  // on `gpu` where it is not null (that memory is then the GPU's).
  // On host memory a ReLU is computed in the passes of the batch norm or add
  // before it, or of the max pooling after it (FuseRelus); on device memory
  // each layer runs its own.
  void UseDeviceMemory(StepMemory* memory, GpuOps* gpu = nullptr) {
    memory_ = memory;
    gpu_ = gpu;
    FuseRelus(memory == nullptr);
  }

  // The first layer (a connection layer included) that does not run on a
  // GPU, as "layer 'name' (type)"; "" when all do.
  std::string LayerOffGpu() const;
  // The layers whose passes their source's or consumer's compute (FuseRelus), in order.
  std::vector<std::string> FusedLayers() const;
  // Whether this rank runs a layer of type `type`.
  bool HasLayerType(const std::string& type) const;

  // The first layer that carries state from one training pass to the next
  // (a GRU with carry_state), or "" when none does; and forgetting it all.
  std::string StateCarrier() const;
  void ResetState();
  // Every carrying layer's state, in the net's order.
  std::vector<CarriedState> CarriedStates();

  DataLayer& data_layer() { return *data_; }
  LossLayer& loss_layer() { return *loss_; }
  // The parameters this worker holds (lib/plan/partition.h), named as the plan's.
  std::vector<Param*> params();
  // The floating-point operations of one training step of `batch` records
  // per worker on this rank: each layer's forward and backward counts (as
  // dl-plan's cost model counts them) times the records it holds.
  double TrainingFlops(int batch) const;
  // Where a layer's training passes spent their time, summed over the steps
  // so far (the first included), on the host's clock. A connection layer's
  // time is mostly its wait for the group's other workers. On a GPU it is what
  // the host took to issue the passes, not what the GPU took to run them.
  struct LayerTime {
    std::string name, type;
    double forward_s = 0.0, backward_s = 0.0;
    double flops_per_step = 0.0;  // both passes, as TrainingFlops counts them
  };
  std::vector<LayerTime> LayerTimes(int batch) const;
  // Feature bytes so far, summed over the connection layers (ConnectionLayer::bytes_in/out).
  uint64_t feature_bytes_in() const;
  uint64_t feature_bytes_out() const;
  // One line per connection layer.
  std::vector<std::string> DescribeConnections() const;

 private:
  struct Node {
    std::unique_ptr<Layer> layer;
    std::vector<Layer*> srcs;
    ConnectionLayer* connection = nullptr;     // when the layer is one
    Placement placement;                       // of its feature: how many records this rank holds
    double forward_s = 0.0, backward_s = 0.0;  // training passes so far (LayerTimes)
    bool fused = false;                        // a ReLU its source's or consumer's passes compute
    std::vector<Layer*> pass_srcs;             // what its passes read: srcs, or a fused ReLU source's source
  };

  // Fuses each ReLU that is its source's only consumer into that source where
  // the source can compute it (Layer::set_fused_relu), else into its own only
  // consumer where that can (Layer::set_relu_source) (on), or none (off).
  void FuseRelus(bool on);

  struct Building;
  // Layer `i` of the net: where its feature is held, the connections it
  // needs from its sources, and the layer itself if this rank holds it.
  Status AddLayer(Building& b, size_t i);
  // How layer `i`'s feature is spread over the group, its sources placed as `needs`.
  Status Place(const Building& b, size_t i, const std::vector<Placement>& needs, Placement* held) const;
  // Layer `i`'s fields as rank `r` sets it up (its range of the outputs when split).
  nlohmann::json FieldsForRank(const Building& b, size_t i, int r) const;
  // A connection layer for each source not placed as needed; the sources layer `i` reads.
  std::vector<Layer*> Connect(Building& b, size_t i, const std::vector<Placement>& needs);

  std::vector<Node> nodes_;      // in the order they run forward
  std::vector<Layer*> cleared_;  // gradients cleared before Backward (PlanGradWrites)
  // For the layers on rows that sum over the group (synchronised batch norm); null in a group of one.
  std::unique_ptr<GroupSum> group_sum_;
  StepMemory* memory_ = nullptr;
  GpuOps* gpu_ = nullptr;
  DataLayer* data_ = nullptr;
  LossLayer* loss_ = nullptr;
  int group_size_ = 1, rank_ = 0;
  uint64_t draw_seed_ = 0;  // train.seed: keys the layers' random draws
  uint64_t worker_ = 0;     // and this worker's id, those that are not a record's
};

}  // namespace shoal
