// A job file as dl-plan reads it: YAML → the job → its net → a data-parallel plan.
#include <memory>
#include <string>

#include "config/job.h"
#include "graph/net.h"
#include "plan/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  JobConfig job;
  if (!ParseJob(std::string(reinterpret_cast<const char*>(data), size), "job.yaml", &job).ok()) return 0;
  std::unique_ptr<Net> net;
  if (!Net::Build(job, &net, /*allocate_params=*/false).ok()) return 0;
  Plan plan;
  (void)MakeDataParallelPlan(job, PlanOptions(), &plan);
  return 0;
}
