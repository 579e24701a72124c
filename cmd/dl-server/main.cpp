// dl-server: serves one shard of the parameter table of a plan.
#include "core/exit_codes.h"
#include "core/memory_tuning.h"
#include "core/output.h"
#include "core/process.h"
#include "core/slurm_env.h"
#include "plan/partition.h"
#include "plan/plan.h"
#include "ps/server.h"
#include "tool_main.h"

namespace {

int Main(int argc, char** argv) {
  using namespace shoal;
  SetLogName("dl-server");
  KeepLargeAllocations();
  CLI::App app{"dl-server: serve one shard of a plan's parameter table"};
  std::string plan_path;
  ServerOptions options;
  app.add_option("--plan", plan_path, "plan.json written by dl-plan")->required();
  int flag_id = -1;
  app.add_option("--id", flag_id, "this server's id in the plan (default: SLURM_PROCID, or 0)")
      ->check(NotNegative());
  app.add_option("--checkpoint-dir", options.checkpoint_dir, "where to write checkpoints (none if unset)");
  app.add_option("--keep", options.keep_checkpoints,
                 "checkpoints of this plan to keep (others in the directory are left alone)")
      ->check(Positive());
  app.add_option("--rescue-dir", options.rescue_dir,
                 "where the last checkpoint goes when --checkpoint-dir keeps failing (default: "
                 "shoal-rescue/ in the temporary directory, $TMPDIR or /tmp)");
  app.add_option("--resume", options.resume_dir,
                 "start from this server's checkpoint in DIR (written by dl-ckpt prepare-resume)");
  int parent = 0;
  std::string incarnation;
  app.add_option("--parent", parent, "end when process PID (the supervisor that started this one) ends")
      ->check(Positive());
  app.add_option("--incarnation", incarnation,
                 "the supervisor's name for this life of the server; a shutdown request must carry it "
                 "(default: none, and anyone may shut it down)");
  SHOAL_PARSE_COMMAND_LINE(app, argc, argv);
  if (!incarnation.empty()) options.incarnation = IncarnationOf(incarnation);
  if (parent > 0) {
    Status ties = DieWithParent(parent);
    if (!ties.ok()) return ReportFailure(ties);
  }

  Plan plan;
  Status s = LoadPlan(plan_path, &plan);
  if (s.ok()) s = ResolveProcessId("server", flag_id, static_cast<int>(plan.servers.size()), &options.id);
  if (s.ok() && ServerInWorker(plan, options.id) >= 0)
    s = Status::InvalidArgument("server " + std::to_string(options.id) + " of this plan lives in worker " +
                                std::to_string(options.id) +
                                "'s process (cluster.server_worker_separate: false): "
                                "dl-worker --id " +
                                std::to_string(options.id) + " serves it");
  if (!s.ok()) return ReportFailure(s);
  ParameterServer server(plan, options);
  s = server.Start();
  if (!s.ok()) return ReportFailure(s);
  Log("server " + std::to_string(options.id) + " serving plan " + plan.hash + " on " +
      plan.servers[options.id].endpoint + (incarnation.empty() ? "" : " as " + incarnation));
  s = server.Run();
  nlohmann::json record = server.Report();
  record["event"] = "server_done";
  record["ok"] = s.ok();
  Output out(false);
  out.Record(record);
  if (s.ok()) s = out.status();
  return s.ok() ? kExitOk : ReportFailure(s);
}

}  // namespace

int main(int argc, char** argv) { return shoal::GuardedMain(Main, argc, argv); }
