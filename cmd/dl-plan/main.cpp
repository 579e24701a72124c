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
#include "plan/rate_fit.h"
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
// `workers_exchange`: whether its workers exchange inside each step (WorkersExchange).
nlohmann::json CheckSummary(const std::string& path, const Plan& plan, bool workers_exchange) {
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
          {"workers_exchange", workers_exchange},
          {"data", {{"dataset", data.dataset}, {"shards", data.shards}, {"shard_seed", data.shard_seed}}}};
}

// dl-plan JOB: the options of planning a job.
struct PlanFlags {
  std::string job_path, out_path, cluster_path;
  std::vector<std::string> overrides;
  PlanOptions options;
  PlannerOptions planner;
  bool explain = false;
};

void AddPlanOptions(CLI::App& app, PlanFlags* f) {
  app.add_option("job", f->job_path, "job file (YAML; - reads standard input)");
  app.add_option("-o,--out", f->out_path, "where to write plan.json (default: standard output)");
  app.add_option("--set", f->overrides, "override a job field: section.field=value (repeatable)");
  app.add_option("--endpoints", f->options.endpoints, "server endpoints, one per server")->delimiter(',');
  app.add_option("--worker-endpoints", f->options.worker_endpoints,
                 "worker endpoints, one per worker, for groups of more than one (features between workers)")
      ->delimiter(',');
  app.add_option("--group-size", f->planner.group_size, "workers per group M (default: the planner chooses)")
      ->check(Positive());
  app.add_option("--base-port", f->options.base_port, "first loopback port when no endpoints are given")
      ->check(CLI::Range(1, 65535));
  app.add_option("--cluster", f->cluster_path, "cluster profile (YAML; default: loopback, 10 Gbit/s)");
  app.add_option(
         "--workers", f->planner.workers,
         "workers N to plan and write, sharing the job's step of records (default: the job's workers)")
      ->check(Positive());
  app.add_option("--servers", f->planner.servers,
                 "servers of their own per server group, planned and written (default: the job's)")
      ->check(Positive());
  app.add_option("--strategy", f->planner.strategy,
                 "optimal (default), data (every layer on the batch) or model")
      ->transform(ChoiceOf<Strategy>());
  app.add_option("--exchange", f->planner.exchange,
                 "job (default: as cluster.server_worker_separate says), servers, allreduce (a server with "
                 "every worker) or auto (the one predicted faster); the plan's job says which")
      ->transform(ChoiceOf<Exchange>());
  app.add_flag("--explain", f->explain, "print the plan's costs as a table on standard error");
}

int PlanJobFile(PlanFlags& f) {
  JobConfig job;
  Status s = LoadJobFile(f.job_path, f.overrides, &job);
  if (s.ok() && !f.cluster_path.empty()) s = LoadClusterProfile(f.cluster_path, &f.planner.profile);
  PartitionReport report;
  Plan plan;
  if (s.ok()) s = BuildPlan(job, f.planner, f.options, &report, &plan);
  if (s.ok()) s = CheckDeviceMemoryFits(plan);
  if (!s.ok()) return ReportFailure(s);
  if (f.explain) Log("the plan's costs\n" + ExplainReport(report));
  std::string text;
  s = PlanText(plan, &text);
  return s.ok() ? WriteOut(f.out_path, text) : ReportFailure(s);
}

// dl-plan calibrate.
struct CalibrateFlags {
  CalibrateOptions calibration;
  std::string out, serve;
  double serve_seconds = 60.0;
  std::vector<std::string> fit_runs;  // run directories whose layer times the layer rates are fitted to
};

CLI::App* AddCalibrate(CLI::App& app, CalibrateFlags* f) {
  CLI::App* calibrate =
      app.add_subcommand("calibrate", "measure a cluster profile here and write it as YAML");
  calibrate->add_option("-o,--out", f->out, "where to write the profile (default: standard output)");
  calibrate
      ->add_option("--peer", f->calibration.peers,
                   "endpoint of a `dl-plan calibrate --serve`, repeated (or comma-separated) for several "
                   "measured at once (default: loopback)")
      ->delimiter(',');
  calibrate->add_option("--serve", f->serve, "answer calibrations at this endpoint instead of measuring");
  calibrate->add_option("--serve-seconds", f->serve_seconds, "how long --serve answers")->check(Positive());
  calibrate->add_option("--nodes", f->calibration.nodes, "nodes of the cluster, written into the profile")
      ->check(NotNegative());
  calibrate->add_option("--name", f->calibration.name, "the profile's name");
  calibrate->add_option("--seconds", f->calibration.seconds_each, "time spent on each measurement")
      ->check(CLI::Range(0.01, 10.0));
  calibrate->add_option(
      "--fit-run", f->fit_runs,
      "a run directory (train-local --run-dir) whose workers computed alone on the CPU, repeatable: each "
      "layer type's rate is fitted to its layers' measured times, and a loopback profile's bandwidth to the "
      "steps of runs that exchanged (the table goes to standard error)");
  return calibrate;
}

int RunCalibrate(const CalibrateFlags& f) {
  if (!f.serve.empty()) {
    Status s = ServeEcho(f.serve, f.serve_seconds);
    return s.ok() ? kExitOk : ReportFailure(s);
  }
  // The runs are read before anything is measured: a bad one costs no calibration.
  std::vector<FitRun> runs(f.fit_runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    const Status read = ReadFitRun(f.fit_runs[i], &runs[i]);
    if (!read.ok()) return ReportFailure(read);
  }
  ClusterProfile profile;
  Status s = Calibrate(f.calibration, &profile);
  if (!s.ok()) return ReportFailure(s);
  std::string comment = "measured by dl-plan calibrate";
  if (!runs.empty()) {
    RateFit fit;
    s = FitLayerRates(runs, f.calibration.peers.empty(), &profile, &fit);
    if (!s.ok()) return ReportFailure(s);
    Log(DescribeFit(fit));
    comment += "; layer_gflops fitted to the layer times of " + std::to_string(f.fit_runs.size()) +
               " run(s) of workers with " + std::to_string(fit.compute_threads) +
               " compute thread(s); the sgemm rate and the batch effect are one thread's";
    if (fit.network == RateFit::Network::kFitted || fit.network == RateFit::Network::kFittedAtEnd)
      comment += "; bandwidth_gbps fitted to the runs' steps";
  }
  return WriteOut(f.out, ClusterProfileToYaml(profile, comment));
}

// dl-plan check and dl-plan relocate: a plan already written.
struct PlanFileFlags {
  std::string path, out;
  PlanOptions moved;  // relocate's endpoints
};

CLI::App* AddCheck(CLI::App& app, PlanFileFlags* f) {
  CLI::App* check = app.add_subcommand(
      "check", "check a plan.json whole, as servers and workers load it, and print what it runs as JSON");
  check->add_option("plan", f->path, "plan.json (- reads standard input)")->required();
  return check;
}

int RunCheck(const PlanFileFlags& f) {
  Plan plan;
  Status s = LoadPlan(f.path, &plan);
  bool exchange = false;
  if (s.ok()) s = WorkersExchange(plan, &exchange);
  if (!s.ok()) return ReportFailure(s);
  return WriteOut("", CheckSummary(f.path, plan, exchange).dump(2) + "\n");
}

CLI::App* AddRelocate(CLI::App& app, PlanFileFlags* f) {
  CLI::App* relocate = app.add_subcommand("relocate", "the same plan on other endpoints (ports or hosts)");
  relocate->add_option("plan", f->path, "plan.json (- reads standard input)")->required();
  relocate->add_option("-o,--out", f->out, "where to write the plan (default: standard output)");
  relocate->add_option("--endpoints", f->moved.endpoints, "server endpoints, one per server")->delimiter(',');
  relocate->add_option("--worker-endpoints", f->moved.worker_endpoints, "worker endpoints, one per worker")
      ->delimiter(',');
  relocate->add_option("--base-port", f->moved.base_port, "first loopback port where no endpoints are given")
      ->check(CLI::Range(1, 65535));
  return relocate;
}

int RunRelocate(const PlanFileFlags& f) {
  Plan plan;
  Status s = LoadPlan(f.path, &plan);
  const bool grouped = s.ok() && !plan.workers.empty() && !plan.workers[0].endpoint.empty();
  if (s.ok()) s = PlaceEndpoints(f.moved, grouped, &plan);
  if (!s.ok()) return ReportFailure(s);
  plan.hash = PlanContentHash(plan);
  std::string text;
  s = PlanText(plan, &text);
  return s.ok() ? WriteOut(f.out, text) : ReportFailure(s);
}

int Main(int argc, char** argv) {
  SetLogName("dl-plan");
  CLI::App app{"dl-plan: compute the plan of a training job"};
  PlanFlags plan;
  AddPlanOptions(app, &plan);
  CalibrateFlags calibration;
  CLI::App* calibrate = AddCalibrate(app, &calibration);
  PlanFileFlags checked, relocated;
  CLI::App* check = AddCheck(app, &checked);
  CLI::App* relocate = AddRelocate(app, &relocated);
  SHOAL_PARSE_COMMAND_LINE(app, argc, argv);
  if (relocate->parsed()) return RunRelocate(relocated);
  if (check->parsed()) return RunCheck(checked);
  if (calibrate->parsed()) {
    if (!plan.job_path.empty()) {
      Log("'calibrate' takes no job file");
      return kExitUsage;
    }
    return RunCalibrate(calibration);
  }
  if (plan.job_path.empty()) {
    Log("a job file is required (- reads one from standard input)\n" + app.help());
    return kExitUsage;
  }
  return PlanJobFile(plan);
}

}  // namespace

int main(int argc, char** argv) { return shoal::GuardedMain(Main, argc, argv); }
