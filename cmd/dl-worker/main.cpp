// dl-worker: trains its part of a plan, talking to the plan's servers. A
// server bound to its worker (cluster.server_worker_separate: false, the
// AllReduce placement) runs inside that worker's process, which reaches it
// without a socket; the other workers reach it over the network as usual.
#include <cstdio>
#include <memory>
#include <thread>

#include "core/exit_codes.h"
#include "core/memory_tuning.h"
#include "core/output.h"
#include "core/process.h"
#include "core/slurm_env.h"
#include "plan/partition.h"
#include "plan/plan.h"
#include "ps/server.h"
#include "tool_main.h"
#include "train/evaluate.h"
#include "train/sample.h"
#include "train/worker.h"

namespace {

int Main(int argc, char** argv) {
  using namespace shoal;
  SetLogName("dl-worker");
  KeepLargeAllocations();
  CLI::App app{"dl-worker: train a plan's model on this worker's shard"};
  std::string plan_path;
  WorkerOptions options;
  bool no_eval = false;
  std::string metrics_path;
  app.add_option("--plan", plan_path, "plan.json written by dl-plan")->required();
  int flag_id = -1;
  app.add_option("--id", flag_id, "this worker's global id in the plan (default: SLURM_PROCID, or 0)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--shards", options.shard_dir, "shard directory (default: the job's data.shards)");
  app.add_option("--threads", options.threads, "compute threads")->check(CLI::PositiveNumber);
  app.add_option("--steps", options.steps, "train this many steps (default: from the job)")
      ->check(CLI::PositiveNumber);
  app.add_option("--timeout-ms", options.timeout_ms,
                 "give up on a server after this long (default: the job's)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--standalone", options.standalone, "update parameters in this process; no servers");
  app.add_option("--slow-ms", options.slow_ms,
                 "sleep this long every step: a slow worker on purpose, for tests and experiments "
                 "(ssp's waits, stragglers)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--metrics", metrics_path, "also append every record to this file as JSON lines");
  auto* no_eval_flag = app.add_flag("--no-eval", no_eval, "skip the evaluation on the test shard");
  EvalOptions eval;
  auto* eval_only =
      app.add_option("--eval-only", eval.checkpoint,
                     "evaluate this checkpoint on the test shard and exit: a merged file, one step's "
                     "server files, or a directory (its newest complete step)");
  eval_only->excludes(no_eval_flag)->excludes("--standalone")->excludes("--steps")->excludes("--id");
  SampleOptions sample;
  auto* sample_from =
      app.add_option("--sample", sample.checkpoint,
                     "print text a char-RNN's checkpoint writes and exit (a merged file, one step's "
                     "server files, or a directory): --prime, then --chars drawn symbols");
  sample_from->excludes(eval_only)
      ->excludes(no_eval_flag)
      ->excludes("--standalone")
      ->excludes("--steps")
      ->excludes("--id");
  app.add_option("--prime", sample.prime, "--sample: the text the net reads first")->capture_default_str();
  app.add_option("--chars", sample.symbols, "--sample: symbols to draw")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 24));
  app.add_option("--temperature", sample.temperature, "--sample: below 1 sharper, above 1 flatter")
      ->capture_default_str()
      ->check(CLI::Range(1e-3, 100.0));
  app.add_option("--sample-seed", sample.seed, "--sample: the draws' seed")->capture_default_str();
  app.add_option(
      "--state-dir", options.state_dir,
      "where a net that carries state (carry_state) keeps it step by step, so that a restart in the "
      "middle of a pass goes on exactly");
  ServerOptions hosted;  // the server this worker hosts, if the plan binds one to it
  auto* checkpoint_dir =
      app.add_option("--checkpoint-dir", hosted.checkpoint_dir,
                     "the server this worker hosts (server_worker_separate: false): where it "
                     "writes checkpoints (none if unset)");
  app.add_option("--keep", hosted.keep_checkpoints, "the hosted server: checkpoints to keep")
      ->check(CLI::PositiveNumber);
  app.add_option("--resume", hosted.resume_dir,
                 "the hosted server: start from its checkpoint in DIR (written by dl-ckpt prepare-resume)");
  int parent = 0;
  std::string incarnation;
  app.add_option("--parent", parent, "end when process PID (the supervisor that started this one) ends")
      ->check(CLI::PositiveNumber);
  app.add_option("--incarnation", incarnation,
                 "the supervisor's name for this life of the process (default: a random one)");
  SHOAL_PARSE_COMMAND_LINE(app, argc, argv);
  if (parent > 0) {
    Status ties = DieWithParent(parent);
    if (!ties.ok()) return ReportFailure(ties);
  }
  options.evaluate = !no_eval;
  options.incarnation = IncarnationOf(incarnation);

  Plan plan;
  Status s = LoadPlan(plan_path, &plan);
  if (*sample_from) {
    sample.shard_dir = options.shard_dir;
    sample.threads = options.threads;
    std::string text;
    if (s.ok()) s = SampleText(plan, sample, &text);
    if (!s.ok()) return ReportFailure(s);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputc('\n', stdout);
    return std::fflush(stdout) == 0 ? kExitOk : ReportFailure(Status::IOError("cannot write the text"));
  }
  if (*eval_only) {
    eval.shard_dir = options.shard_dir;
    eval.threads = options.threads;
    nlohmann::json record;
    if (s.ok()) s = EvaluateCheckpoint(plan, eval, &record);
    if (!s.ok()) return ReportFailure(s);
    Output out(false);
    out.Record(record);
    return out.status().ok() ? kExitOk : ReportFailure(out.status());
  }
  if (s.ok()) s = ResolveProcessId("worker", flag_id, static_cast<int>(plan.workers.size()), &options.id);
  if (!s.ok()) return ReportFailure(s);
  hosted.id = options.standalone ? -1 : ServerInWorker(plan, options.id);
  if (hosted.id < 0 && (*checkpoint_dir || !hosted.resume_dir.empty()))
    return ReportFailure(Status::InvalidArgument(
        "--checkpoint-dir and --resume are for a server this worker hosts, and this plan's servers run on "
        "their "
        "own (cluster.server_worker_separate: true" +
        std::string(options.standalone ? ", or --standalone" : "") + "): give them to dl-server"));
  std::unique_ptr<ParameterServer> server;
  std::thread serving;
  Status served;
  if (hosted.id >= 0) {
    hosted.incarnation = options.incarnation;
    hosted.in_worker = true;
    server = std::make_unique<ParameterServer>(plan, hosted);
    s = server->Start();
    if (!s.ok()) return ReportFailure(s.Within("server " + std::to_string(hosted.id) + " (in this worker)"));
    Log("worker " + std::to_string(options.id) + " hosts server " + std::to_string(hosted.id) + " on " +
        plan.servers[hosted.id].endpoint + ", and reaches it in-process");
    serving = std::thread([&] { served = server->Run(); });
  }
  std::FILE* metrics = nullptr;
  if (!metrics_path.empty() && !(metrics = std::fopen(metrics_path.c_str(), "a")))
    s = Status::IOError("cannot open '" + metrics_path + "' for writing");
  Output out(StdoutIsTerminal());
  out.CopyTo(metrics);
  if (s.ok()) {
    Worker worker(plan, options, &out);
    WorkerResult result;
    s = worker.Run(&result);
  }
  if (server) {  // it serves the other workers until every one is done
    if (!s.ok()) server->Stop(s.Within("worker " + std::to_string(options.id)));
    serving.join();
    nlohmann::json record = server->Report();
    record["event"] = "server_done";
    record["ok"] = served.ok();
    out.Record(record);
    if (s.ok()) s = served.Within("server " + std::to_string(hosted.id) + " (in this worker)");
  }
  if (metrics && std::fclose(metrics) != 0 && s.ok())
    s = Status::IOError("cannot write '" + metrics_path + "'");
  return s.ok() ? kExitOk : ReportFailure(s.Within("worker " + std::to_string(options.id)));
}

}  // namespace

int main(int argc, char** argv) { return shoal::GuardedMain(Main, argc, argv); }
