#include "train/worker.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <thread>

#include "core/log.h"
#include "core/median.h"
#include "device/cuda_device.h"
#include "device/host_device.h"
#include "ops/blas.h"
#include "ops/onednn.h"
#include "ops/winograd_convolution.h"
#include "plan/partition.h"
#include "train/device_memory_fit.h"
#include "train/elastic_table.h"
#include "train/evaluate.h"
#include "train/gradient_clip.h"

namespace shoal {

Worker::Worker(const Plan& plan, WorkerOptions options, Output* output)
    : plan_(plan), options_(std::move(options)), output_(output) {}

double Worker::SecondsSince(Clock::time_point t) const {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

Status Worker::Run(WorkerResult* result) {
  SHOAL_RETURN_IF_ERROR(SetUp());
  SHOAL_RETURN_IF_ERROR(Train(result));
  return Finish(result);
}

Status Worker::SetUp() {
  const JobConfig& job = plan_.job;
  workers_ = options_.standalone ? 1 : static_cast<int>(plan_.workers.size());
  if (options_.standalone && options_.id != 0)
    return Status::InvalidArgument("worker id " + std::to_string(options_.id) +
                                   ": a standalone worker trains alone, as worker 0");
  if (options_.id < 0 || options_.id >= workers_)
    return Status::InvalidArgument("worker id " + std::to_string(options_.id) +
                                   " is not in the plan (it has " + std::to_string(workers_) + " workers)");
  const int group_size = GroupSize(plan_);
  if (job.train.clip_norm > 0.0 && group_size > 1)
    return Status::InvalidArgument("train.clip_norm clips a whole gradient, but the plan's groups of " +
                                   std::to_string(group_size) +
                                   " workers each hold part of it: plan it data parallel (--strategy data)");
  if (options_.standalone && group_size > 1)
    return Status::InvalidArgument("the plan runs groups of " + std::to_string(group_size) +
                                   " workers: it cannot run standalone");
  const int timeout_ms = options_.timeout_ms > 0 ? options_.timeout_ms : job.cluster.timeout_ms;
  SetComputeThreads(options_.threads);
  SHOAL_RETURN_IF_ERROR(SetComputePrecision(job.train.compute));
  evaluates_ = options_.evaluate && options_.id == 0;
  SHOAL_RETURN_IF_ERROR(Net::Build(job, &whole_, /*allocate_params=*/evaluates_));
  // A group's channel; in groups of one, a channel over every worker where
  // a layer sums over their batches (dl-plan gave them endpoints).
  if (ExchangeInStep(group_size, workers_, *whole_)) {
    channel_ = std::make_unique<GroupChannel>();
    SHOAL_RETURN_IF_ERROR(channel_->Open(group_size > 1 ? GroupPeersOf(plan_, options_.id, timeout_ms)
                                                        : AllWorkersOf(plan_, options_.id, timeout_ms)));
  }
  SHOAL_RETURN_IF_ERROR(PartitionedNet::Build(plan_, options_.id, channel_.get(), &net_));
  if (job.train.cuda) SHOAL_RETURN_IF_ERROR(CheckRunsOnGpu(*net_));
  state_carrier_ = net_->StateCarrier();
  if (!state_carrier_.empty() && group_size > 1)
    return Status::InvalidArgument(
        "layer '" + state_carrier_ +
        "' carries its state from batch to batch (carry_state), but the plan's groups of " +
        std::to_string(group_size) + " workers share each batch: plan it data parallel (--strategy data)");
  if (!state_carrier_.empty() && !options_.state_dir.empty()) {
    state_files_ = std::make_unique<CarriedStateFiles>(options_.state_dir, options_.id,
                                                       job.train.checkpoint_every, plan_.hash_value());
    SHOAL_RETURN_IF_ERROR(state_files_->Open());
  }
  SHOAL_RETURN_IF_ERROR(OpenShards());
  batch_ = job.train.batch_size;
  steps_ = options_.steps > 0 ? options_.steps : job.train.steps;
  if (steps_ == 0)
    steps_ = static_cast<long long>(job.train.epochs * total_records_ / (1.0 * workers_ * batch_));
  if (steps_ < 1) return Status::InvalidArgument("the job trains for 0 steps (too few epochs for the data)");
  SHOAL_RETURN_IF_ERROR(OpenTable());
  // A rejoining worker goes on at the servers' step, and at the place in its
  // shard that step reads: its data order depends on the step alone.
  SHOAL_RETURN_IF_ERROR(table_->Join(&first_step_));
  if (first_step_ > 0)
    Log("worker " + std::to_string(options_.id) + " rejoins at step " + std::to_string(first_step_));
  SHOAL_RETURN_IF_ERROR(AllocateFeatures());
  if (job.train.device_memory_mb > 0.0 || job.train.cuda) SHOAL_RETURN_IF_ERROR(OpenDeviceMemory(timeout_ms));
  for (const auto& line : net_->DescribeConnections())
    Log("worker " + std::to_string(options_.id) + ": " + line);
  return Status::Ok();
}

bool Worker::DisplaysAfter(long long step) const {
  return (step + 1) % plan_.job.train.display_every == 0 || step + 1 == steps_;
}

Status Worker::AllocateFeatures() {
  try {
    net_->Allocate(batch_);
  } catch (const std::bad_alloc&) {
    // Each layer's values and gradients for every record of the batch.
    double bytes = 0;
    for (const LayerPlan& l : plan_.layers) bytes += 2.0 * 4.0 * l.feature_size * batch_;
    return Status::IOError("out of memory allocating the features of a batch of " + std::to_string(batch_) +
                           " records a worker: about " +
                           std::to_string(static_cast<long long>(bytes / (1 << 20))) +
                           " MiB of values and gradients");
  }
  return Status::Ok();
}

Status Worker::OpenShards() {
  const std::string dir = options_.shard_dir.empty() ? plan_.job.data.shards : options_.shard_dir;
  if (dir.empty())
    return Status::InvalidArgument("no shard directory: set data.shards in the job or pass --shards");
  Manifest manifest;
  SHOAL_RETURN_IF_ERROR(LoadManifest(dir, &manifest));
  SHOAL_RETURN_IF_ERROR(MakeInputFeeds(plan_.job, manifest, &feeds_));
  SHOAL_RETURN_IF_ERROR(CheckShardsFitNet(feeds_.shape, manifest, dir, whole_.get()));
  if (static_cast<int>(manifest.train.size()) < workers_)
    return Status::InvalidArgument("'" + dir + "' has " + std::to_string(manifest.train.size()) +
                                   " shards for " + std::to_string(workers_) +
                                   " workers: shard it again with --shards " + std::to_string(workers_));
  // Streams are contiguous stretches of the text: a worker's records must be one.
  if (!state_carrier_.empty() && !manifest.contiguous)
    return Status::InvalidArgument(
        "layer '" + state_carrier_ +
        "' carries its state from batch to batch (carry_state), which needs each worker's "
        "records in their order, but '" +
        dir + "' was shuffled: shard it with dl-shard --contiguous");
  // Worker w reads shards w, w+W, ...: with one shard each, the dealing rule
  // makes W workers × batch B see one worker × batch W·B's records.
  for (size_t s = 0; s < manifest.train.size(); ++s) {
    total_records_ += manifest.train[s].records;
    if (static_cast<int>(s % workers_) != options_.id) continue;
    shards_.push_back(std::make_unique<ShardReader>());
    SHOAL_RETURN_IF_ERROR(shards_.back()->Open(dir, manifest.train[s], manifest));
    shard_numbers_.push_back(s);
  }
  dealt_shards_ = manifest.train.size();
  if (evaluates_) {
    test_ = std::make_unique<ShardReader>();
    SHOAL_RETURN_IF_ERROR(test_->Open(dir, manifest.test, manifest));
  }
  if (evaluates_ && manifest.val && plan_.job.train.eval_on == EvalSet::kVal) {
    val_ = std::make_unique<ShardReader>();
    SHOAL_RETURN_IF_ERROR(val_->Open(dir, *manifest.val, manifest));
  }
  return Status::Ok();
}

Status Worker::OpenTable() {
  params_ = net_->params();
  if (options_.standalone) {
    auto local = std::make_unique<LocalTable>(plan_, params_);
    SHOAL_RETURN_IF_ERROR(local->init_status());
    table_ = std::move(local);
    return Status::Ok();
  }
  const int timeout_ms = options_.timeout_ms > 0 ? options_.timeout_ms : plan_.job.cluster.timeout_ms;
  auto remote = std::make_unique<RemoteTable>(plan_, options_.id, params_, timeout_ms, options_.incarnation);
  SHOAL_RETURN_IF_ERROR(remote->Connect());
  remote_ = remote.get();
  // With train.overlap each layer's parameters travel beside its passes.
  hooks_ = remote->overlaps() ? remote_ : nullptr;
  // easgd trains a local replica that exchanges with the servers' centre.
  if (plan_.job.cluster.consistency == ConsistencyModel::kEasgd)
    table_ = std::make_unique<ElasticTable>(plan_, options_.id, params_, std::move(remote));
  else
    table_ = std::move(remote);
  return Status::Ok();
}

Status Worker::OpenDeviceMemory(int timeout_ms) {
  const TrainConfig& train = plan_.job.train;
  size_t budget = DeviceMemoryBudget(train);
  if (train.cuda) {
    const int gpus = std::max(1, CudaDeviceCount());
    const int gpu = train.gpu >= 0 ? train.gpu : options_.id % gpus;
    SHOAL_RETURN_IF_ERROR(LoadCudaOps(gpu, &gpu_ops_));
    // Without a budget, nine tenths of the GPU (the rest for the CUDA
    // context and cuBLAS's own memory) shared with the workers that would
    // take the same GPU were they all on this machine, and no more than is
    // free now (a worker that started first took its share).
    const int sharing = train.gpu >= 0 ? workers_ : (workers_ + gpus - 1) / gpus;
    size_t total = 0;
    const size_t free_now = CudaFreeBytes(gpu, &total);
    if (budget == 0) budget = std::min(free_now / 10 * 9, total / 10 * 9 / sharing);
    SHOAL_RETURN_IF_ERROR(OpenCudaDevice(gpu, budget, &device_));
    gpu_ops_->TakeWorkspaceFrom(device_.get());
    Log("worker " + std::to_string(options_.id) + ": training passes on " + gpu_ops_->name());
  } else {
    device_ = std::make_unique<HostDevice>(budget);
  }
  StepOps ops = net_->TrainingStepOps();
  ops.scratch_bytes = GpuScratchBytes(train, *net_);
  DeviceMemoryPlan memory;
  SHOAL_RETURN_IF_ERROR(PlanDeviceMemory(ops, budget, &memory));
  const size_t pinned = std::count(memory.pinned.begin(), memory.pinned.end(), true);
  Log("worker " + std::to_string(options_.id) + ": " + device_->name() + " of " + Mib(budget) +
      " for a step's " + Mib(ops.TotalBytes()) + ": " + std::to_string(pinned) + " of " +
      std::to_string(ops.buffers.size()) + " buffers pinned (" + Mib(memory.pinned_bytes) +
      "), access pool 2 x " + Mib(memory.peak) + "; a step copies " + Mib(memory.bytes_to_device) + " in, " +
      Mib(memory.bytes_to_host) + " out");
  SHOAL_RETURN_IF_ERROR(
      StepMemory::Create(device_.get(), std::move(ops), std::move(memory), timeout_ms, &device_memory_));
  net_->UseDeviceMemory(device_memory_.get(), gpu_ops_.get());
  return Status::Ok();
}

Worker::ByteCounts Worker::Counts() const {
  ByteCounts c;
  if (remote_) c.params_out = remote_->bytes_sent(), c.params_in = remote_->bytes_received();
  c.features_in = net_->feature_bytes_in();
  c.features_out = net_->feature_bytes_out();
  return c;
}

Status Worker::Train(WorkerResult* result) {
  const TrainConfig& train = plan_.job.train;
  // The first pass's batches in an order of train.seed's, the job's count of
  // whole batches of them (the same for every worker, so W workers × B still
  // see one worker × W·B's records, where one shard holds a record more);
  // later passes shuffle each worker's records anew.
  // A layer that carries state reads the records as streams instead (in order).
  LoaderOptions loading;
  loading.batch = batch_;
  loading.seed = train.seed * 7919 + options_.id;
  loading.first_record = first_step_ * batch_;
  loading.first_pass_seed = static_cast<uint64_t>(train.seed);
  loading.first_pass_batches = total_records_ / (static_cast<uint64_t>(workers_) * batch_);
  loading.streams = !state_carrier_.empty();
  loading.threads = LoaderThreads();
  loading.depth = std::max(4, loading.threads + 2);
  loading.shard_numbers = shard_numbers_;
  loading.dealt_shards = dealt_shards_;
  BatchLoader loader(std::move(shards_), feeds_.Training(), loading);
  if (options_.id == 0 && ChecksLearning() && steps_ < kShortestJudged)
    Log("worker 0: " + std::to_string(steps_) + " steps are too few for train.divergence_check to judge " +
        "whether the run learns (it takes " + std::to_string(kShortestJudged) + " or more)");
  step_ms_.reserve(steps_);
  start_ = last_display_ = last_checkpoint_ = Clock::now();
  last_display_step_ = last_checkpoint_step_ = static_cast<long long>(first_step_);
  // Only worker 0 decides, with one server group (the first group's files are
  // the checkpoints) and no worker's carried state that must match the set.
  asks_checkpoints_ = options_.id == 0 && remote_ && train.checkpoint_every == 0 &&
                      train.checkpoint_seconds > 0 && plan_.job.cluster.nserver_groups == 1 && !state_files_;
  ask_ahead_ = 2 * static_cast<uint64_t>(workers_);  // two updates of every worker
  const long long eval_every =
      train.eval_every >= 0 ? train.eval_every : std::max<long long>(kDefaultEvalSpacing, (steps_ + 4) / 5);
  window_bytes_ = Counts();
  Batch b;  // out here, so that the loader reuses its buffers
  for (long long step = static_cast<long long>(first_step_); step < steps_; ++step) {
    const auto asked = Clock::now();
    SHOAL_RETURN_IF_ERROR(loader.Next(&b));
    times_.input += SecondsSince(asked);
    if (CheckpointDue(step)) SHOAL_RETURN_IF_ERROR(AskCheckpoint(step));
    SHOAL_RETURN_IF_ERROR(Step(step, b));
    const bool last = step + 1 == steps_;
    if (DisplaysAfter(step)) SHOAL_RETURN_IF_ERROR(Display(step, result));
    if (evaluates_ && eval_every > 0 && (step + 1) % eval_every == 0 && !last) {
      nlohmann::json record = {{"event", "eval"}, {"worker", options_.id}};
      SHOAL_RETURN_IF_ERROR(Evaluate(step + 1, /*final=*/false, &record, result));
      output_->Record(record);
    }
  }
  return Status::Ok();
}

bool Worker::CheckpointDue(long long step) const {
  constexpr long long kFewestSteps = 10;                       // between two sets, however short the run
  if (!asks_checkpoints_ || step + 1 >= steps_) return false;  // the servers write the last at the end
  const long long since = step + 1 - last_checkpoint_step_;
  if (since < kFewestSteps) return false;
  return since >= (steps_ + 9) / 10 || SecondsSince(last_checkpoint_) >= plan_.job.train.checkpoint_seconds;
}

Status Worker::AskCheckpoint(long long step) {
  std::vector<uint64_t> versions;
  uint64_t version = static_cast<uint64_t>(step) + 1;
  if (plan_.job.cluster.consistency != ConsistencyModel::kBsp) {
    SHOAL_RETURN_IF_ERROR(remote_->CheckpointAt(0, &versions));
    version = *std::max_element(versions.begin(), versions.end()) + ask_ahead_;
  }
  SHOAL_RETURN_IF_ERROR(remote_->CheckpointAt(version, &versions));
  if (*std::max_element(versions.begin(), versions.end()) >= version) {
    ask_ahead_ *= 2;  // a server passed it between the two asks
    return Status::Ok();
  }
  last_checkpoint_ = Clock::now();
  last_checkpoint_step_ = step + 1;
  return Status::Ok();
}

Status Worker::Step(long long step, const Batch& b) {
  const auto t0 = Clock::now();
  const RemoteTable::Busy before = remote_ ? remote_->busy() : RemoteTable::Busy();
  net_->Allocate(b.size);
  if (b.stream_start)
    net_->ResetState();
  else if (step == static_cast<long long>(first_step_) && step > 0)
    SHOAL_RETURN_IF_ERROR(RestoreState(step));
  std::memcpy(net_->data_layer().data().data(), b.pixels.data(), 4 * b.pixels.size());
  net_->data_layer().labels() = b.labels;
  double loss = 0.0;
  {
    // A step longer than a quarter of the timeout is told to the servers:
    // the timeout bounds silence, not work.
    const ComputingSpell computing(table_.get(), static_cast<uint64_t>(step));
    SHOAL_RETURN_IF_ERROR(net_->Forward(Phase::kTrain, step, hooks_));
    // The state the next step starts from, before anything of this step leaves:
    // a restart rejoins at this step or the next, and finds both.
    if (state_files_) SHOAL_RETURN_IF_ERROR(state_files_->Save(step + 1, net_->CarriedStates()));
    // A diverged step's gradients never reach the servers (nor their
    // checkpoints): checked before backprop, which sends them as it goes.
    loss = net_->loss_layer().loss();
    if (!std::isfinite(loss))
      return Status::InvalidArgument("the loss diverged at step " + std::to_string(step) + TrainingAdvice());
    if (options_.slow_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(options_.slow_ms));
    SHOAL_RETURN_IF_ERROR(net_->Backward(step, hooks_));
  }
  // Nothing has left yet (clip_norm turns overlap off): the whole gradient is here.
  if (plan_.job.train.clip_norm > 0.0) ClipGradientNorm(params_, plan_.job.train.clip_norm);
  SHOAL_RETURN_IF_ERROR(table_->Push(step, loss));
  // With overlap this step's values are still on their way. A display
  // counts them in its window's bytes, so they are taken now, inside the
  // step's time (the next forward pass would wait for them all the same).
  if (remote_ && DisplaysAfter(step)) SHOAL_RETURN_IF_ERROR(remote_->Settle());
  step_ms_.push_back(1000.0 * SecondsSince(t0));
  times_.steps += step_ms_.back() / 1000.0;
  if (remote_) {
    const RemoteTable::Busy after = remote_->busy();
    times_.busy.encode += after.encode - before.encode;
    times_.busy.wait += after.wait - before.wait;
    times_.busy.decode += after.decode - before.decode;
  }
  if (step_ms_.size() == 1) {
    first_step_layers_ = net_->LayerTimes(batch_);
    first_step_times_ = times_;
  }
  window_loss_ += loss;
  ++window_;
  return Status::Ok();
}

Status Worker::RestoreState(long long step) {
  if (state_carrier_.empty()) return Status::Ok();
  bool found = false;
  if (state_files_) SHOAL_RETURN_IF_ERROR(state_files_->Load(step, batch_, net_->CarriedStates(), &found));
  if (!found)
    Log("worker " + std::to_string(options_.id) + " rejoins at step " + std::to_string(step) +
        ", in the middle of a pass, with no state saved for it" +
        (state_files_ ? " ('" + state_files_->Path(step) + "')" : std::string(" (no --state-dir)")) +
        ": layer '" + state_carrier_ +
        "' starts its streams from zeros, and the result differs from a run without the restart");
  return Status::Ok();
}

Status Worker::Display(long long step, WorkerResult* result) {
  const double span = SecondsSince(last_display_);
  nlohmann::json r = {{"event", "step"},
                      {"worker", options_.id},
                      {"step", step + 1},
                      {"steps", steps_},
                      {"loss", window_loss_ / window_},
                      {"records_per_s", span > 0 ? (step + 1 - last_display_step_) * batch_ / span : 0.0},
                      {"elapsed_s", SecondsSince(start_)},
                      // The clock evaluations record too: dl-report draws both against it.
                      {"train_seconds", SecondsSince(start_) - eval_seconds_}};
  // Per step over the window, payload only, as dl-plan predicts them
  // (plan.json's planner.layers): gradients out and values in; features
  // received forward and their gradients sent backward (the step settled
  // its values).
  const ByteCounts now = Counts();
  const double n = static_cast<double>(step + 1 - last_display_step_);
  r["bytes_per_step"] = {{"param_bytes_out", (now.params_out - window_bytes_.params_out) / n},
                         {"param_bytes_in", (now.params_in - window_bytes_.params_in) / n},
                         {"feature_bytes_in", (now.features_in - window_bytes_.features_in) / n},
                         {"feature_bytes_out", (now.features_out - window_bytes_.features_out) / n}};
  window_bytes_ = now;
  char line[256];
  std::snprintf(line, sizeof line, "worker %d  step %lld/%lld  loss %.4f  %.0f records/s  %.1fs", options_.id,
                step + 1, steps_, window_loss_ / window_, r["records_per_s"].get<double>(),
                SecondsSince(start_));
  output_->Live(r, line);
  result->final_loss = window_loss_ / window_;
  SHOAL_RETURN_IF_ERROR(CheckLearning(step, window_loss_ / window_));
  window_loss_ = 0.0;
  window_ = 0;
  last_display_ = Clock::now();
  last_display_step_ = step + 1;
  return Status::Ok();
}

std::string Worker::TrainingAdvice() const {
  const ClusterConfig& c = plan_.job.cluster;
  char rate[32];
  std::snprintf(rate, sizeof rate, "%g", plan_.job.train.learning_rate);
  return std::string(" at learning rate ") + rate + " under consistency '" + Name(c.consistency) + "'" +
         (TraitsOf(c.consistency).one_version_a_step
              ? ""
              : " (stale gradients act as extra momentum: they need a lower rate)") +
         "; lower train.learning_rate" +
         (plan_.job.train.divergence_check ? ", or set train.divergence_check: false" : "") +
         " (docs/job-file.md)";
}

bool Worker::ChecksLearning() const {
  // Without classes (an RBM's reconstruction error) there is no uniform guess.
  return plan_.job.train.divergence_check && net_->loss_layer().classes() > 0;
}

Status Worker::CheckLearning(long long step, double window_loss) {
  constexpr int kDisplays = 3;
  constexpr long long kSteps = 150;
  if (!ChecksLearning() || steps_ < kShortestJudged) return Status::Ok();
  // A uniform guess over C classes loses ln C a record; a collapsed net sits
  // there (to within noise), a learning one falls below it within a few displays.
  const double uniform = std::log(static_cast<double>(net_->loss_layer().classes()));
  if (window_loss < 0.99 * uniform) {
    stuck_displays_ = 0;
    return Status::Ok();
  }
  if (stuck_displays_++ == 0) stuck_since_ = last_display_step_;
  // A short run is judged over its last third, and at its end on what it has shown.
  const bool last = step + 1 >= steps_;
  const long long needed = std::min(kSteps, steps_ / 3);
  if ((stuck_displays_ < kDisplays && !last) || step + 1 - stuck_since_ < needed) return Status::Ok();
  char detail[96];
  std::snprintf(detail, sizeof detail, "at or above a uniform guess's (ln %d = %.3f; the last display %.3f)",
                net_->loss_layer().classes(), uniform, window_loss);
  return Status::InvalidArgument("the loss has stayed " + std::string(detail) + " for " +
                                 std::to_string(stuck_displays_) + " displays since step " +
                                 std::to_string(stuck_since_) + ": the run is not learning" +
                                 TrainingAdvice());
}

int Worker::LoaderThreads() const {
  if (plan_.job.data.loader_threads > 0) return plan_.job.data.loader_threads;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores - options_.threads);
}

Status Worker::Evaluate(long long step, bool final, nlohmann::json* record, WorkerResult* result) {
  const auto t0 = Clock::now();
  const double trained = SecondsSince(start_) - eval_seconds_;
  EvalResult eval;
  SHOAL_RETURN_IF_ERROR(table_->FetchAll(whole_->params(), static_cast<uint64_t>(step)));
  const bool on_val = val_ && !final;
  const ShardReader* shard = on_val ? val_.get() : test_.get();
  {
    const std::unique_ptr<Keepalive> busy =
        table_->KeepBusy("evaluating step " + std::to_string(step) + " on " +
                         std::to_string(shard->records()) + (on_val ? " validation" : " test") + " records");
    SHOAL_RETURN_IF_ERROR(EvaluateOnShard(whole_.get(), shard, feeds_.Evaluation(), 0, &eval));
  }
  eval_seconds_ += SecondsSince(t0);
  nlohmann::json metric = eval.Metric(on_val ? "val" : "test");
  metric.update({{"step", step}, {"train_seconds", trained}});
  SHOAL_RETURN_IF_ERROR(table_->Report(metric.dump()));
  record->update(metric);
  if (eval.classifies && !on_val) result->test_accuracy = eval.accuracy;
  return Status::Ok();
}

Status Worker::Finish(WorkerResult* result) {
  const double train_seconds = SecondsSince(start_);
  result->steps = steps_;
  result->ms_per_step_median = Median(step_ms_);
  nlohmann::json done = {{"event", "done"},
                         {"worker", options_.id},
                         {"steps", steps_},
                         {"train_seconds", train_seconds},
                         {"ms_per_step_median", result->ms_per_step_median},
                         {"final_loss", result->final_loss}};
  // Where the steps' time went, and each layer's time (PartitionedNet::LayerTimes), over
  // layer_steps steps: those this process timed but the first, whose setup (kernels chosen,
  // memory first touched) a step does not repeat. Compute includes what the forward and
  // backward passes wait for features of a group's other workers.
  std::vector<PartitionedNet::LayerTime> layer_times = net_->LayerTimes(batch_);
  StepTimes t = times_;
  size_t layer_steps = step_ms_.size();
  if (layer_steps > 1 && first_step_layers_.size() == layer_times.size()) {
    --layer_steps;
    for (size_t i = 0; i < layer_times.size(); ++i) {
      layer_times[i].forward_s -= first_step_layers_[i].forward_s;
      layer_times[i].backward_s -= first_step_layers_[i].backward_s;
    }
    t.input -= first_step_times_.input;
    t.steps -= first_step_times_.steps;
    t.busy.encode -= first_step_times_.busy.encode;
    t.busy.wait -= first_step_times_.busy.wait;
    t.busy.decode -= first_step_times_.busy.decode;
  }
  done["steps_timed"] = step_ms_.size();
  done["layer_steps"] = layer_steps;
  done["time_s"] = {{"input", t.input},
                    {"steps", t.steps},
                    {"compute", t.steps - t.busy.total()},
                    {"encode", t.busy.encode},
                    {"wait_servers", t.busy.wait},
                    {"decode", t.busy.decode}};
  done["flops_per_step"] = net_->TrainingFlops(batch_);
  nlohmann::json& layers = done["layers"] = nlohmann::json::array();
  for (const PartitionedNet::LayerTime& layer : layer_times)
    layers.push_back({{"layer", layer.name},
                      {"type", layer.type},
                      {"forward_s", layer.forward_s},
                      {"backward_s", layer.backward_s},
                      {"flops_per_step", layer.flops_per_step}});
  done["kernels"] = {{"sgemm", SgemmBackend()},
                     {"onednn", OneDnnDescription()},
                     {"openblas_core", OpenBlasCore()},
                     {"winograd", WinogradEnabled()},
                     {"compute_threads", ComputeThreads()},
                     {"compute", ComputePrecision()}};
  // What the servers' updates_from should count for this worker (async: no update lost).
  if (remote_) done["updates_sent"] = remote_->updates_sent();
  if (device_memory_) {
    const DeviceMemoryPlan& plan = device_memory_->plan();
    done["device_memory"] = {{"device", device_->name()},
                             {"budget_bytes", device_->budget()},
                             {"peak_bytes", device_->peak_bytes()},
                             {"step_bytes", device_memory_->ops().TotalBytes()},
                             {"pinned_bytes", plan.pinned_bytes},
                             {"pool_bytes", plan.pool_bytes()},
                             {"steps", device_memory_->steps()},
                             {"bytes_to_device", device_->bytes_to_device()},
                             {"bytes_to_host", device_->bytes_to_host()},
                             {"planned_bytes_to_device_per_step", plan.bytes_to_device},
                             {"planned_bytes_to_host_per_step", plan.bytes_to_host}};
  }
  // Worker 0 evaluates the parameters its last step produced (under BSP, the
  // final ones) before it says it is done, so the servers' final checkpoints
  // record the result.
  if (evaluates_) SHOAL_RETURN_IF_ERROR(Evaluate(steps_, /*final=*/true, &done, result));
  // How long this worker waited for the others to be done: under async, what
  // the slowest worker costs the run.
  const Clock::time_point finishing = Clock::now();
  SHOAL_RETURN_IF_ERROR(table_->Finish());
  done["done_wait_s"] = SecondsSince(finishing);
  output_->Record(done);
  return output_->status();
}

}  // namespace shoal
