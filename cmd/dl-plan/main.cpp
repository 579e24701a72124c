// dl-plan: job file -> plan.json (partitioning, placement, parameter slices,
// endpoints, predicted costs); `dl-plan calibrate` measures a cluster profile;
// `dl-plan check` reads a plan as the servers and workers will, and says what
// it runs; `dl-plan relocate` moves a plan to other ports or hosts.
#include "config/job.h"
#include "core/exit_codes.h"
#include "core/file_util.h"
#include "core/output.h"
#include "plan/calibrate.h"
#include "plan/plan.h"
#include "plan/planner.h"
#include "tool_main.h"
#include "train/device_memory_fit.h"

namespace {

using namespace shoal;

// To `path`, atomically, or to standard output when it is empty or "-".
int WriteOut(const std::string& path, const std::string& text) {
  Status s;
  if (path.empty() || path == "-") {
    Output out(false);
    out.Text(text);
    s = out.status();
  } else {
    s = WriteFileAtomic(path, text);
  }
  return s.ok() ? kExitOk : ReportFailure(s);
}

// What `dl-plan check` prints: what the plan runs, for people and scripts.
nlohmann::json CheckSummary(const std::string& path, const Plan& plan) {
  nlohmann::json servers = nlohmann::json::array(), workers = nlohmann::json::array();
  for (const ServerPlan& server : plan.servers) servers.push_back(server.endpoint);
  for (const WorkerPlan& worker : plan.workers) workers.push_back(worker.endpoint);
  const DataConfig& data = plan.job.data;
  return {{"plan", path},
          {"ok", true},
          {"hash", plan.hash},
          {"name", plan.job.name},
          {"workers", plan.workers.size()},
          {"servers", plan.servers.size()},
          {"server_worker_separate", plan.job.cluster.server_worker_separate},
          {"consistency", plan.job.cluster.consistency},
          {"server_endpoints", servers},
          {"worker_endpoints", workers},
          {"data", {{"dataset", data.dataset}, {"shards", data.shards}, {"shard_seed", data.shard_seed}}}};
}

int Main(int argc, char** argv) {
  SetLogName("dl-plan");
  CLI::App app{"dl-plan: compute the plan of a training job"};
  std::string job_path, out_path, cluster_path;
  std::vector<std::string> overrides;
  PlanOptions options;
  PlannerOptions planner;
  bool explain = false;
  app.add_option("job", job_path, "job file (YAML; - reads standard input)");
  app.add_option("-o,--out", out_path, "where to write plan.json (default: standard output)");
  app.add_option("--set", overrides, "override a job field: section.field=value (repeatable)");
  app.add_option("--endpoints", options.endpoints, "server endpoints, one per server")->delimiter(',');
  app.add_option("--worker-endpoints", options.worker_endpoints,
                 "worker endpoints, one per worker, for groups of more than one (features between workers)")
      ->delimiter(',');
  app.add_option("--group-size", planner.group_size, "workers per group M (default: the planner chooses)")
      ->check(CLI::PositiveNumber);
  app.add_option("--base-port", options.base_port, "first loopback port when no endpoints are given")
      ->check(CLI::Range(1, 65535));
  app.add_option("--cluster", cluster_path, "cluster profile (YAML; default: loopback, 10 Gbit/s)");
  app.add_option(
         "--workers", planner.workers,
         "workers N to plan and write, sharing the job's step of records (default: the job's workers)")
      ->check(CLI::PositiveNumber);
  app.add_option("--servers", planner.servers,
                 "servers of their own per server group, planned and written (default: the job's)")
      ->check(CLI::PositiveNumber);
  app.add_option("--strategy", planner.strategy,
                 "optimal (default), data (every layer on the batch) or model")
      ->transform(ChoiceOf<Strategy>());
  app.add_option(
         "--exchange", planner.exchange,
         "job (default: as cluster.server_worker_separate says), servers, allreduce (a server with every "
         "worker) or auto (the one predicted faster); the plan's job says which")
      ->transform(ChoiceOf<Exchange>());
  app.add_flag("--explain", explain, "print the plan's costs as a table on standard error");

  CLI::App* calibrate =
      app.add_subcommand("calibrate", "measure a cluster profile here and write it as YAML");
  CalibrateOptions calibration;
  std::string calibrate_out, serve;
  double serve_seconds = 60.0;
  calibrate->add_option("-o,--out", calibrate_out, "where to write the profile (default: standard output)");
  calibrate
      ->add_option(
          "--peer", calibration.peers,
          "endpoint of a `dl-plan calibrate --serve`, repeated (or comma-separated) for several measured "
          "at once (default: loopback)")
      ->delimiter(',');
  calibrate->add_option("--serve", serve, "answer calibrations at this endpoint instead of measuring");
  calibrate->add_option("--serve-seconds", serve_seconds, "how long --serve answers")
      ->check(CLI::PositiveNumber);
  calibrate->add_option("--nodes", calibration.nodes, "nodes of the cluster, written into the profile")
      ->check(CLI::NonNegativeNumber);
  calibrate->add_option("--name", calibration.name, "the profile's name");
  calibrate->add_option("--seconds", calibration.seconds_each, "time spent on each measurement")
      ->check(CLI::Range(0.01, 10.0));
  CLI::App* check = app.add_subcommand("check",
                                       "check a plan.json whole, as servers and workers load it, "
                                       "and print what it runs as JSON");
  std::string check_path;
  check->add_option("plan", check_path, "plan.json (- reads standard input)")->required();
  CLI::App* relocate = app.add_subcommand("relocate", "the same plan on other endpoints (ports or hosts)");
  std::string relocate_path, relocate_out;
  PlanOptions moved;
  relocate->add_option("plan", relocate_path, "plan.json (- reads standard input)")->required();
  relocate->add_option("-o,--out", relocate_out, "where to write the plan (default: standard output)");
  relocate->add_option("--endpoints", moved.endpoints, "server endpoints, one per server")->delimiter(',');
  relocate->add_option("--worker-endpoints", moved.worker_endpoints, "worker endpoints, one per worker")
      ->delimiter(',');
  relocate->add_option("--base-port", moved.base_port, "first loopback port where no endpoints are given")
      ->check(CLI::Range(1, 65535));
  SHOAL_PARSE_COMMAND_LINE(app, argc, argv);

  if (relocate->parsed()) {
    Plan plan;
    Status s = LoadPlan(relocate_path, &plan);
    const bool grouped = s.ok() && !plan.workers.empty() && !plan.workers[0].endpoint.empty();
    if (s.ok()) s = PlaceEndpoints(moved, grouped, &plan);
    if (!s.ok()) return ReportFailure(s);
    plan.hash = PlanContentHash(plan);
    std::string text;
    s = PlanText(plan, &text);
    return s.ok() ? WriteOut(relocate_out, text) : ReportFailure(s);
  }
  if (check->parsed()) {
    Plan plan;
    Status s = LoadPlan(check_path, &plan);
    if (!s.ok()) return ReportFailure(s);
    return WriteOut("", CheckSummary(check_path, plan).dump(2) + "\n");
  }
  if (calibrate->parsed()) {
    if (!job_path.empty()) {
      Log("'calibrate' takes no job file");
      return kExitUsage;
    }
    if (!serve.empty()) {
      Status s = ServeEcho(serve, serve_seconds);
      return s.ok() ? kExitOk : ReportFailure(s);
    }
    ClusterProfile profile;
    Status s = Calibrate(calibration, &profile);
    if (!s.ok()) return ReportFailure(s);
    return WriteOut(calibrate_out, ClusterProfileToYaml(profile, "measured by dl-plan calibrate"));
  }
  if (job_path.empty()) {
    Log("a job file is required (- reads one from standard input)\n" + app.help());
    return kExitUsage;
  }
  JobConfig job;
  Status s = LoadJobFile(job_path, overrides, &job);
  if (s.ok() && !cluster_path.empty()) s = LoadClusterProfile(cluster_path, &planner.profile);
  PartitionReport report;
  Plan plan;
  if (s.ok()) s = BuildPlan(job, planner, options, &report, &plan);
  if (s.ok()) s = CheckDeviceMemoryFits(plan);
  if (!s.ok()) return ReportFailure(s);
  if (explain) Log("the plan's costs\n" + ExplainReport(report));
  std::string text;
  s = PlanText(plan, &text);
  return s.ok() ? WriteOut(out_path, text) : ReportFailure(s);
}

}  // namespace

int main(int argc, char** argv) { return shoal::GuardedMain(Main, argc, argv); }
