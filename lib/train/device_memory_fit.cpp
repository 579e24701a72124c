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

Status CheckDeviceMemoryFits(const Plan& plan) {
  if (plan.job.train.device_memory_mb <= 0.0) return Status::Ok();
  const size_t budget = DeviceMemoryBudget(plan.job.train);
  std::set<int> ranks;
  for (const WorkerPlan& w : plan.workers) {
    if (!ranks.insert(w.rank).second) continue;
    // A group's net holds its channel but sends nothing while it is built.
    GroupChannel unopened;
    std::unique_ptr<PartitionedNet> net;
    SHOAL_RETURN_IF_ERROR(PartitionedNet::Build(plan, w.id, &unopened, &net));
    net->Allocate(plan.job.train.batch_size);
    DeviceMemoryPlan memory;
    SHOAL_RETURN_IF_ERROR(
        PlanDeviceMemory(net->TrainingStepOps(), budget, &memory).Within("worker " + std::to_string(w.id)));
  }
  return Status::Ok();
}

}  // namespace shoal
