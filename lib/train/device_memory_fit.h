// Whether each worker's training step fits its device's memory
// (train.device_memory_mb), decided as the worker will decide it: GeePS's
// Algorithm 1 over the step's operation sequence (lib/device/memory_plan.h).
// dl-plan asks before it writes a plan, so that a budget too small is
// refused at planning, naming the worker and the smallest budget that would
// do, not when the run starts.
#pragma once

#include <cstddef>

#include "config/job.h"
#include "core/status.h"
#include "net/partitioned_net.h"
#include "plan/plan.h"

namespace shoal {

// train.device_memory_mb in bytes, as the worker and this check hold the device to it.
size_t DeviceMemoryBudget(const TrainConfig& train);

// The device memory a GPU worker keeps beside its step's buffers for
// cuDNN's convolution workspace (StepOps::scratch_bytes): 64 MiB where it
// runs a convolution, within which the ops choose their algorithms.
size_t GpuScratchBytes(const TrainConfig& train, const PartitionedNet& net);

// Whether every layer of `net` runs on a GPU (train.device: cuda): the
// first that does not is named, with the types that do, in an InvalidArgument.
Status CheckRunsOnGpu(const PartitionedNet& net);

// Ok when the job sets no budget and no GPU. Checks one worker of each rank
// of a group (the groups are alike), building its part of the net at the
// job's batch: its layers on the GPU, its step within the budget. Returns the
// errors of PartitionedNet::Build, CheckRunsOnGpu and PlanDeviceMemory, naming the worker.
Status CheckDeviceMemoryFits(const Plan& plan);

}  // namespace shoal
