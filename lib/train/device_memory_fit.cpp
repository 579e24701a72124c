#include "train/device_memory_fit.h"

#include <memory>
#include <set>

#include "comm/group_channel.h"
#include "device/memory_plan.h"
#include "net/partitioned_net.h"

namespace shoal {

size_t DeviceMemoryBudget(const TrainConfig& train) {
  return static_cast<size_t>(train.device_memory_mb * 1048576.0);
}

size_t GpuScratchBytes(const TrainConfig& train, const PartitionedNet& net) {
  return train.cuda && net.HasLayerType("convolution") ? size_t{64} << 20 : 0;
}

Status CheckRunsOnGpu(const PartitionedNet& net) {
  const std::string off = net.LayerOffGpu();
  if (off.empty()) return Status::Ok();
  return Status::InvalidArgument(
      "train.device is cuda, but " + off +
      " has no GPU form: on a GPU a worker runs data, fully_connected, convolution, pooling, batch_norm "
      "(without sync), lrn (of an odd local_size up to 15, k >= 1e-5, beta >= 0.01), relu, sigmoid, flatten, "
      "add, concat, dropout and softmax_loss (one label a record) layers, in groups of one (--strategy "
      "data)");
}

Status CheckDeviceMemoryFits(const Plan& plan) {
  const TrainConfig& train = plan.job.train;
  if (train.device_memory_mb <= 0.0 && !train.cuda) return Status::Ok();
  const size_t budget = DeviceMemoryBudget(train);
  std::set<int> ranks;
  for (const WorkerPlan& w : plan.workers) {
    if (!ranks.insert(w.rank).second) continue;
    // A group's net holds its channel but sends nothing while it is built.
    GroupChannel unopened;
    std::unique_ptr<PartitionedNet> net;
    SHOAL_RETURN_IF_ERROR(PartitionedNet::Build(plan, w.id, &unopened, &net));
    const std::string worker = "worker " + std::to_string(w.id);
    if (train.cuda) SHOAL_RETURN_IF_ERROR(CheckRunsOnGpu(*net).Within(worker));
    if (budget == 0) continue;  // the GPU's share, known only when the worker starts
    net->Allocate(train.batch_size);
    StepOps ops = net->TrainingStepOps();
    ops.scratch_bytes = GpuScratchBytes(train, *net);
    DeviceMemoryPlan memory;
    SHOAL_RETURN_IF_ERROR(PlanDeviceMemory(ops, budget, &memory).Within(worker));
  }
  return Status::Ok();
}

}  // namespace shoal
