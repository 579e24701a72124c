// dl-plan: job file -> plan.json (partitioning, placement, parameter slices, endpoints).
#include "parse_command_line.h"

#include "config/job.h"
#include "core/exit_codes.h"
#include "core/file_util.h"
#include "plan/plan.h"

int main(int argc, char** argv) {
  using namespace shoal;
  CLI::App app{"dl-plan: compute the plan of a training job"};
  std::string job_path, out_path;
  std::vector<std::string> overrides;
  PlanOptions options;
  app.add_option("job", job_path, "job file (YAML)")->required();
  app.add_option("-o,--out", out_path, "where to write plan.json (default: standard output)");
  app.add_option("--set", overrides, "override a job field: section.field=value (repeatable)");
  app.add_option("--endpoints", options.endpoints, "server endpoints, one per server")->delimiter(',');
  app.add_option("--base-port", options.base_port, "first loopback port when no endpoints are given")
      ->check(CLI::Range(1, 65535));
  SHOAL_PARSE_COMMAND_LINE(app, argc, argv);

  JobConfig job;
  Status s = LoadJobFile(job_path, overrides, &job);
  Plan plan;
  if (s.ok()) s = MakeDataParallelPlan(job, options, &plan);
  if (!s.ok()) return ReportFailure("dl-plan", s);
  std::string text = PlanToJson(plan).dump(2) + "\n";
  if (out_path.empty()) {
    if (std::fputs(text.c_str(), stdout) < 0 || std::fflush(stdout) != 0)
      return ReportFailure("dl-plan", Status::IOError("cannot write to standard output"));
    return kExitOk;
  }
  s = WriteFileAtomic(out_path, text);
  return s.ok() ? kExitOk : ReportFailure("dl-plan", s);
}
