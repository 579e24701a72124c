#include "train/worker.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>

#include "data/shard.h"
#include "ops/blas.h"
#include "plan/partition.h"
#include "train/batch_loader.h"
#include "train/elastic_table.h"
#include "train/evaluate.h"

namespace shoal {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct ByteCounts {
  uint64_t params_out = 0, params_in = 0, features_in = 0, features_out = 0;
};

}  // namespace

Worker::Worker(const Plan& plan, WorkerOptions options, Progress* progress)
    : plan_(plan), options_(std::move(options)), progress_(progress) {}

Status Worker::Run(WorkerResult* result) {
  const JobConfig& job = plan_.job;
  const int workers = options_.standalone ? 1 : static_cast<int>(plan_.workers.size());
  if (options_.id < 0 || options_.id >= workers)
    return Status::InvalidArgument("worker id " + std::to_string(options_.id) + " is not in the plan (it has " +
                                   std::to_string(workers) + " workers)");
  const int group_size = GroupSize(plan_);
  if (options_.standalone && group_size > 1)
    return Status::InvalidArgument("the plan runs groups of " + std::to_string(group_size) +
                                   " workers: it cannot run standalone");
  const int timeout_ms = options_.timeout_ms > 0 ? options_.timeout_ms : job.cluster.timeout_ms;
  SetComputeThreads(options_.threads);
  std::unique_ptr<GroupChannel> channel;
  if (group_size > 1) {
    channel = std::make_unique<GroupChannel>();
    SHOAL_RETURN_IF_ERROR(channel->Open(GroupPeersOf(plan_, options_.id, timeout_ms)));
  }
  SHOAL_RETURN_IF_ERROR(PartitionedNet::Build(plan_, options_.id, channel.get(), &net_));
  const bool evaluates = options_.evaluate && options_.id == 0;
  SHOAL_RETURN_IF_ERROR(Net::Build(job, &whole_, /*allocate_params=*/evaluates));

  std::string dir = options_.shard_dir.empty() ? job.data.shards : options_.shard_dir;
  if (dir.empty()) return Status::InvalidArgument("no shard directory: set data.shards in the job or pass --shards");
  Manifest manifest;
  SHOAL_RETURN_IF_ERROR(LoadManifest(dir, &manifest));
  SHOAL_RETURN_IF_ERROR(CheckShardsFitNet(manifest, dir, whole_.get()));
  if (static_cast<int>(manifest.train.size()) < workers)
    return Status::InvalidArgument("'" + dir + "' has " + std::to_string(manifest.train.size()) +
                                   " shards for " + std::to_string(workers) +
                                   " workers: shard it again with --shards " + std::to_string(workers));
  // Worker w reads shards w, w+W, ...: with one shard each, the dealing rule
  // makes W workers × batch B see one worker × batch W·B's records.
  std::vector<std::unique_ptr<ShardReader>> mine;
  uint64_t total_records = 0;
  for (size_t s = 0; s < manifest.train.size(); ++s) {
    total_records += manifest.train[s].records;
    if (static_cast<int>(s % workers) != options_.id) continue;
    mine.push_back(std::make_unique<ShardReader>());
    SHOAL_RETURN_IF_ERROR(mine.back()->Open(dir + "/" + manifest.train[s].file));
  }
  const int batch = job.train.batch_size;
  long long steps = options_.steps > 0 ? options_.steps : job.train.steps;
  if (steps == 0) steps = static_cast<long long>(job.train.epochs * total_records / (1.0 * workers * batch));
  if (steps < 1) return Status::InvalidArgument("the job trains for 0 steps (too few epochs for the data)");

  std::vector<Param*> params = net_->params();
  std::unique_ptr<ParamTable> table;
  RemoteTable* remote = nullptr;
  if (options_.standalone) {
    table = std::make_unique<LocalTable>(plan_, params);
  } else {
    auto r = std::make_unique<RemoteTable>(plan_, options_.id, params, timeout_ms);
    SHOAL_RETURN_IF_ERROR(r->Connect());
    remote = r.get();
    // easgd trains a local replica that exchanges with the servers' centre.
    if (job.cluster.consistency == "easgd")
      table = std::make_unique<ElasticTable>(plan_, options_.id, params, std::move(r));
    else
      table = std::move(r);
  }
  // With train.overlap each layer's parameters travel beside its passes.
  LayerHooks* hooks = remote && remote->overlaps() ? remote : nullptr;
  std::unique_ptr<ShardReader> test;
  if (evaluates) {
    test = std::make_unique<ShardReader>();
    SHOAL_RETURN_IF_ERROR(test->Open(dir + "/" + manifest.test.file));
  }

  // A rejoining worker goes on at the servers' step, and at the place in its
  // shard that step reads: its data order depends on the step alone.
  uint64_t first_step = 0;
  SHOAL_RETURN_IF_ERROR(table->Join(&first_step));
  if (first_step > 0)
    std::fprintf(stderr, "dl-worker: worker %d rejoins at step %llu\n", options_.id,
                 static_cast<unsigned long long>(first_step));
  net_->Allocate(batch);
  for (const auto& line : net_->DescribeConnections())
    std::fprintf(stderr, "dl-worker: worker %d: %s\n", options_.id, line.c_str());
  BatchLoader loader(std::move(mine), batch, job.train.seed * 7919 + options_.id, first_step * batch);
  std::vector<double> step_ms;
  step_ms.reserve(steps);
  const auto start = Clock::now();
  double window_loss = 0.0;
  int window = 0;
  auto last_display = start;
  long long last_display_step = static_cast<long long>(first_step);
  auto counts = [&] {
    ByteCounts c;
    if (remote) c.params_out = remote->bytes_sent(), c.params_in = remote->bytes_received();
    c.features_in = net_->feature_bytes_in();
    c.features_out = net_->feature_bytes_out();
    return c;
  };
  ByteCounts window_bytes = counts();
  // Time spent evaluating is not training time: time-to-accuracy curves
  // (bench/frameworks.sh) plot accuracy against train_seconds.
  double eval_seconds = 0.0;
  auto evaluate = [&](long long step, nlohmann::json* record) -> Status {
    const auto t0 = Clock::now();
    const double trained = SecondsSince(start) - eval_seconds;
    EvalResult eval;
    SHOAL_RETURN_IF_ERROR(table->FetchAll(whole_->params(), static_cast<uint64_t>(step)));
    SHOAL_RETURN_IF_ERROR(EvaluateOnShard(whole_.get(), test.get(), 0, &eval));
    eval_seconds += SecondsSince(t0);
    nlohmann::json metric = {{"step", step}, {"test_accuracy", eval.accuracy}, {"test_loss", eval.loss},
                             {"train_seconds", trained}};
    SHOAL_RETURN_IF_ERROR(table->Report(metric.dump()));
    record->update(metric);
    result->test_accuracy = eval.accuracy;
    return Status::Ok();
  };
  for (long long step = static_cast<long long>(first_step); step < steps; ++step) {
    Batch b;
    SHOAL_RETURN_IF_ERROR(loader.Next(&b));
    const auto t0 = Clock::now();
    net_->Allocate(b.size);
    std::memcpy(net_->data_layer().data().data(), b.pixels.data(), 4 * b.pixels.size());
    net_->data_layer().labels() = b.labels;
    SHOAL_RETURN_IF_ERROR(net_->Forward(Phase::kTrain, step, hooks));
    // A diverged step's gradients never reach the servers (nor their
    // checkpoints): checked before backprop, which sends them as it goes.
    if (!std::isfinite(net_->loss_layer().loss()))
      return Status::InvalidArgument("the loss diverged at step " + std::to_string(step) +
                                     " (lower train.learning_rate)");
    if (options_.slow_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(options_.slow_ms));
    SHOAL_RETURN_IF_ERROR(net_->Backward(step, hooks));
    SHOAL_RETURN_IF_ERROR(table->Push(step, net_->loss_layer().loss()));
    step_ms.push_back(1000.0 * SecondsSince(t0));
    window_loss += net_->loss_layer().loss();
    ++window;
    const bool last = step + 1 == steps;
    if ((step + 1) % job.train.display_every == 0 || last) {
      double span = std::chrono::duration<double>(Clock::now() - last_display).count();
      nlohmann::json r = {{"event", "step"}, {"worker", options_.id}, {"step", step + 1}, {"steps", steps},
                          {"loss", window_loss / window},
                          {"records_per_s", span > 0 ? (step + 1 - last_display_step) * batch / span : 0.0},
                          {"elapsed_s", SecondsSince(start)}};
      // Per step over the window, payload only, as dl-plan predicts them
      // (plan.json's planner.layers): gradients out and values in;
      // features received forward and their gradients sent backward. With
      // overlap the window's last values are still on their way: they are
      // taken now (the next forward pass would wait for them all the same).
      if (remote) SHOAL_RETURN_IF_ERROR(remote->Settle());
      const ByteCounts now = counts();
      const double n = static_cast<double>(step + 1 - last_display_step);
      r["bytes_per_step"] = {{"param_bytes_out", (now.params_out - window_bytes.params_out) / n},
                             {"param_bytes_in", (now.params_in - window_bytes.params_in) / n},
                             {"feature_bytes_in", (now.features_in - window_bytes.features_in) / n},
                             {"feature_bytes_out", (now.features_out - window_bytes.features_out) / n}};
      window_bytes = now;
      progress_->Step(r);
      result->final_loss = window_loss / window;
      window_loss = 0.0;
      window = 0;
      last_display = Clock::now();
      last_display_step = step + 1;
    }
    if (evaluates && job.train.eval_every > 0 && (step + 1) % job.train.eval_every == 0 && !last) {
      nlohmann::json record = {{"event", "eval"}, {"worker", options_.id}};
      SHOAL_RETURN_IF_ERROR(evaluate(step + 1, &record));
      progress_->Event(record);
    }
  }
  const double train_seconds = SecondsSince(start);
  result->steps = steps;
  std::vector<double> sorted = step_ms;
  std::sort(sorted.begin(), sorted.end());
  result->ms_per_step_median = sorted.empty() ? 0.0 : sorted[sorted.size() / 2];
  nlohmann::json done = {{"event", "done"}, {"worker", options_.id}, {"steps", steps},
                         {"train_seconds", train_seconds}, {"ms_per_step_median", result->ms_per_step_median},
                         {"final_loss", result->final_loss}};
  // What the servers' updates_from should count for this worker (async: no update lost).
  if (remote) done["updates_sent"] = remote->updates_sent();
  // Worker 0 evaluates the parameters its last step produced (under BSP, the
  // final ones) before it says it is done, so the servers' final checkpoints
  // record the result.
  if (evaluates) SHOAL_RETURN_IF_ERROR(evaluate(steps, &done));
  SHOAL_RETURN_IF_ERROR(table->Finish());
  progress_->Event(done);
  if (!progress_->ok()) return Status::IOError("cannot write to standard output");
  return Status::Ok();
}

}  // namespace shoal
