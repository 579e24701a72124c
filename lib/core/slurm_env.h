// The one place that reads Slurm's environment. A task started by srun knows
// its rank from it; everything else in shoal takes explicit settings.
#pragma once

#include <string>

#include "core/status.h"

namespace shoal {

struct SlurmTask {
  bool present = false;  // SLURM_PROCID is set
  int procid = 0;        // rank of this task within its step
  int ntasks = 0;        // tasks in the step
  int nodeid = 0;
  std::string nodelist;  // SLURM_JOB_NODELIST, compressed ("node[1-2]")
};

// Reads SLURM_PROCID, SLURM_NTASKS, SLURM_NODEID and SLURM_JOB_NODELIST.
Status ReadSlurmTask(SlurmTask* task);

// The id of a process: `flag_id` when given (>= 0); otherwise the Slurm task's
// rank, checked against the `count` processes of this role the plan has.
Status ResolveProcessId(const std::string& role, int flag_id, int count, int* id);

}  // namespace shoal
