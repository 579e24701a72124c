#include "core/slurm_env.h"

#include <cstdlib>

namespace shoal {
namespace {

Status ReadInt(const char* name, int* out) {
  const char* v = std::getenv(name);
  if (!v) return Status::InvalidArgument(std::string("'") + name + "' is not set");
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  if (*v == '\0' || *end != '\0' || n < 0 || n > 1 << 24)
    return Status::InvalidArgument(std::string("'") + name + "' is '" + v + "', not a count");
  *out = static_cast<int>(n);
  return Status::Ok();
}

}  // namespace

Status ReadSlurmTask(SlurmTask* task) {
  *task = SlurmTask();
  if (!std::getenv("SLURM_PROCID")) return Status::Ok();
  task->present = true;
  SHOAL_RETURN_IF_ERROR(ReadInt("SLURM_PROCID", &task->procid).Within("slurm environment"));
  SHOAL_RETURN_IF_ERROR(ReadInt("SLURM_NTASKS", &task->ntasks).Within("slurm environment"));
  if (std::getenv("SLURM_NODEID")) SHOAL_RETURN_IF_ERROR(ReadInt("SLURM_NODEID", &task->nodeid));
  if (const char* nodes = std::getenv("SLURM_JOB_NODELIST")) task->nodelist = nodes;
  return Status::Ok();
}

Status ResolveProcessId(const std::string& role, int flag_id, int count, int* id) {
  if (flag_id >= 0) {
    *id = flag_id;
    return Status::Ok();
  }
  SlurmTask task;
  SHOAL_RETURN_IF_ERROR(ReadSlurmTask(&task));
  if (!task.present) {
    *id = 0;
    return Status::Ok();
  }
  if (task.ntasks != count)
    return Status::InvalidArgument("the Slurm step has " + std::to_string(task.ntasks) +
                                   " tasks but the plan has " + std::to_string(count) + " " + role +
                                   "s (srun --ntasks " + std::to_string(count) + ")");
  *id = task.procid;
  return Status::Ok();
}

}  // namespace shoal
