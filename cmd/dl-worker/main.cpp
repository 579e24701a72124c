// dl-worker: trains its part of a plan, talking to the plan's servers. A
// server bound to its worker (cluster.server_worker_separate: false, the
// AllReduce placement) runs inside that worker's process, which reaches it
// without a socket; the other workers reach it over the network as usual.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include "core/exit_codes.h"
#include "core/file_util.h"
#include "core/json_fields.h"
#include "core/json_text.h"
#include "core/log.h"
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

using namespace shoal;

// Everything the command line sets.
struct Flags {
  std::string plan_path;
  int id = -1;  // -1: SLURM_PROCID, or 0
  WorkerOptions worker;
  bool no_eval = false;
  std::string metrics_path;
  EvalOptions eval;
  SampleOptions sample;
  ServerOptions hosted;  // the server this worker hosts, if the plan binds one to it
  int parent = 0;
  std::string incarnation;
  CLI::Option* eval_only = nullptr;
  CLI::Option* sample_from = nullptr;
  CLI::Option* checkpoint_dir = nullptr;
};

void AddOptions(CLI::App& app, Flags* f) {
  WorkerOptions& w = f->worker;
  app.add_option("--plan", f->plan_path, "plan.json written by dl-plan")->required();
  app.add_option("--id", f->id, "this worker's global id in the plan (default: SLURM_PROCID, or 0)")
      ->check(NotNegative());
  app.add_option("--shards", w.shard_dir,
                 "shard directory (default: the job's data.shards; for --eval-only and --sample, else "
                 "the shards the run.json beside the plan records)");
  app.add_option("--threads", w.threads, "compute threads")->check(Positive());
  app.add_option("--steps", w.steps, "train this many steps (default: from the job)")->check(Positive());
  app.add_option("--timeout-ms", w.timeout_ms, "give up on a server after this long (default: the job's)")
      ->check(Positive());
  app.add_flag("--standalone", w.standalone, "update parameters in this process; no servers");
  app.add_option("--slow-ms", w.slow_ms,
                 "sleep this long every step: a slow worker on purpose, for tests and experiments "
                 "(ssp's waits, stragglers)")
      ->check(NotNegative());
  app.add_option("--metrics", f->metrics_path, "also append every record to this file as JSON lines");
  auto* no_eval = app.add_flag("--no-eval", f->no_eval, "skip the evaluation on the test shard");
  f->eval_only = app.add_option("--eval-only", f->eval.checkpoint,
                                "evaluate this checkpoint on the test shard and exit: a merged file, one "
                                "step's server files, or a directory (its newest complete step)");
  f->eval_only->excludes(no_eval)->excludes("--standalone")->excludes("--steps")->excludes("--id");
  f->sample_from =
      app.add_option("--sample", f->sample.checkpoint,
                     "print text a char-RNN's checkpoint writes and exit (a merged file, one "
                     "step's server files, or a directory): --prime, then --chars drawn symbols");
  f->sample_from->excludes(f->eval_only)
      ->excludes(no_eval)
      ->excludes("--standalone")
      ->excludes("--steps")
      ->excludes("--id");
  app.add_option("--prime", f->sample.prime, "--sample: the text the net reads first")->capture_default_str();
  app.add_option("--chars", f->sample.symbols, "--sample: symbols to draw")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 24));
  app.add_option("--temperature", f->sample.temperature, "--sample: below 1 sharper, above 1 flatter")
      ->capture_default_str()
      ->check(CLI::Range(1e-3, 100.0));
  app.add_option("--sample-seed", f->sample.seed, "--sample: the draws' seed")->capture_default_str();
  app.add_option("--state-dir", w.state_dir,
                 "where a net that carries state (carry_state) keeps it step by step, so that a restart in "
                 "the middle of a pass goes on exactly");
  f->checkpoint_dir = app.add_option("--checkpoint-dir", f->hosted.checkpoint_dir,
                                     "the server this worker hosts (server_worker_separate: false): where "
                                     "it writes checkpoints (none if unset)");
  app.add_option("--keep", f->hosted.keep_checkpoints, "the hosted server: checkpoints to keep")
      ->check(Positive());
  app.add_option("--resume", f->hosted.resume_dir,
                 "the hosted server: start from its checkpoint in DIR (written by dl-ckpt prepare-resume)");
  app.add_option("--parent", f->parent, "end when process PID (the supervisor that started this one) ends")
      ->check(Positive());
  app.add_option("--incarnation", f->incarnation,
                 "the supervisor's name for this life of the process (default: a random one)");
}

// Where --eval-only and --sample read their shards when neither --shards nor
// the job names them: the shards a run recorded in the run.json beside its
// plan (scripts/run-record.py), for a run whose supervisor dealt them itself.
Status RecordedShards(const std::string& plan_path, std::string* dir) {
  const std::string record = (std::filesystem::path(plan_path).parent_path() / "run.json").string();
  std::error_code missing;
  if (plan_path == "-" || !std::filesystem::exists(record, missing)) return Status::Ok();
  std::string text;
  SHOAL_RETURN_IF_ERROR(ReadFile(record, &text, 64 << 20));
  nlohmann::json run;
  SHOAL_RETURN_IF_ERROR(ParseJson(text, "'" + record + "'", &run));
  if (!run.is_object() || !run.contains("shards") || run["shards"].is_null()) return Status::Ok();
  SHOAL_RETURN_IF_ERROR(JsonFields("'" + record + "'").String(run, "", "shards", dir));
  Log("reading the shards '" + record + "' records: " + *dir);
  return Status::Ok();
}

// --sample: the text a char-RNN's checkpoint writes, on standard output.
int Sample(const Plan& plan, Flags& f) {
  f.sample.shard_dir = f.worker.shard_dir;
  f.sample.threads = f.worker.threads;
  std::string text;
  Status s = SampleText(plan, f.sample, &text);
  if (!s.ok()) return ReportFailure(s);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
  return std::fflush(stdout) == 0 ? kExitOk : ReportFailure(Status::IOError("cannot write the text"));
}

// --eval-only: one record of a checkpoint's evaluation.
int EvaluateOnly(const Plan& plan, Flags& f) {
  f.eval.shard_dir = f.worker.shard_dir;
  f.eval.threads = f.worker.threads;
  nlohmann::json record;
  Status s = EvaluateCheckpoint(plan, f.eval, &record);
  if (!s.ok()) return ReportFailure(s);
  Output out(false);
  out.Record(record);
  return out.status().ok() ? kExitOk : ReportFailure(out.status());
}

// The server the plan binds to this worker, if any, started and serving on a thread of its own.
class HostedServer {
 public:
  Status Start(const Plan& plan, ServerOptions options, int worker) {
    id_ = options.id;
    server_ = std::make_unique<ParameterServer>(plan, options);
    SHOAL_RETURN_IF_ERROR(server_->Start().Within(Name()));
    Log("worker " + std::to_string(worker) + " hosts server " + std::to_string(id_) + " on " +
        plan.servers[id_].endpoint + ", and reaches it in-process");
    serving_ = std::thread([this] { served_ = server_->Run(); });
    return Status::Ok();
  }
  // Waits for the server to end (it serves the other workers until every
  // one is done), stopping it first when this worker failed (`worker`).
  Status Finish(const Status& worker, Output* out) {
    if (!server_) return Status::Ok();
    if (!worker.ok()) server_->Stop(worker);
    serving_.join();
    nlohmann::json record = server_->Report();
    record["event"] = "server_done";
    record["ok"] = served_.ok();
    out->Record(record);
    return served_.Within(Name());
  }

 private:
  std::string Name() const { return "server " + std::to_string(id_) + " (in this worker)"; }
  int id_ = -1;
  std::unique_ptr<ParameterServer> server_;
  std::thread serving_;
  Status served_;
};

// Trains, with the server the plan binds to this worker, if any.
Status Train(const Plan& plan, Flags& f) {
  WorkerOptions& options = f.worker;
  SHOAL_RETURN_IF_ERROR(ResolveProcessId("worker", f.id, static_cast<int>(plan.workers.size()), &options.id));
  ServerOptions& hosted = f.hosted;
  hosted.id = options.standalone ? -1 : ServerInWorker(plan, options.id);
  if (hosted.id < 0 && (*f.checkpoint_dir || !hosted.resume_dir.empty()))
    return Status::InvalidArgument(
        "--checkpoint-dir and --resume are for a server this worker hosts, and this plan's servers run on "
        "their own (cluster.server_worker_separate: true" +
        std::string(options.standalone ? ", or --standalone" : "") + "): give them to dl-server");
  HostedServer server;
  if (hosted.id >= 0) {
    hosted.incarnation = options.incarnation;
    hosted.in_worker = true;
    SHOAL_RETURN_IF_ERROR(server.Start(plan, hosted, options.id));
  }
  Status s;
  std::FILE* metrics = nullptr;
  if (!f.metrics_path.empty() && !(metrics = std::fopen(f.metrics_path.c_str(), "a")))
    s = Status::IOError("cannot open '" + f.metrics_path + "' for writing");
  Output out(StdoutIsTerminal());
  out.CopyTo(metrics);
  if (s.ok()) {
    Worker worker(plan, options, &out);
    WorkerResult result;
    s = worker.Run(&result);
  }
  const std::string me = "worker " + std::to_string(options.id);
  const Status served = server.Finish(s.Within(me), &out);
  if (s.ok()) s = served;
  if (metrics && std::fclose(metrics) != 0 && s.ok())
    s = Status::IOError("cannot write '" + f.metrics_path + "'");
  return s.Within(me);
}

int Main(int argc, char** argv) {
  SetLogName("dl-worker");
  KeepLargeAllocations();
  CLI::App app{"dl-worker: train a plan's model on this worker's shard"};
  Flags f;
  AddOptions(app, &f);
  SHOAL_PARSE_COMMAND_LINE(app, argc, argv);
  if (f.parent > 0) {
    Status ties = DieWithParent(f.parent);
    if (!ties.ok()) return ReportFailure(ties);
  }
  f.worker.evaluate = !f.no_eval;
  f.worker.incarnation = IncarnationOf(f.incarnation);
  Plan plan;
  Status s = LoadPlan(f.plan_path, &plan);
  if (!s.ok()) return ReportFailure(s);
  if ((*f.sample_from || *f.eval_only) && f.worker.shard_dir.empty() && plan.job.data.shards.empty()) {
    s = RecordedShards(f.plan_path, &f.worker.shard_dir);
    if (!s.ok()) return ReportFailure(s);
  }
  if (*f.sample_from) return Sample(plan, f);
  if (*f.eval_only) return EvaluateOnly(plan, f);
  s = Train(plan, f);
  return s.ok() ? kExitOk : ReportFailure(s);
}

}  // namespace

int main(int argc, char** argv) { return GuardedMain(Main, argc, argv); }
