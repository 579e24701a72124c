#include "ps/server.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <utility>

#include "core/fault_injection.h"
#include "core/hash.h"
#include "core/json_text.h"
#include "plan/partition.h"

namespace shoal {
namespace {

std::string RescueDir(const std::string& given) {
  if (!given.empty()) return given;
  std::error_code ec;
  const std::filesystem::path temp = std::filesystem::temp_directory_path(ec);
  return ((ec ? std::filesystem::path("/tmp") : temp) / "shoal-rescue").string();
}

// A write may take train.checkpoint_timeout_s; a request waits on the disk
// at most half of what the workers wait for its answer.
CheckpointDeadlines CheckpointDeadlinesOf(const JobConfig& job) {
  CheckpointDeadlines d;
  d.write = std::chrono::milliseconds(static_cast<int64_t>(job.train.checkpoint_timeout_s * 1000));
  d.handover = std::chrono::milliseconds(std::max(1, job.cluster.timeout_ms / 2));
  return d;
}

}  // namespace

ParameterServer::ParameterServer(const Plan& plan, ServerOptions options)
    : options_(std::move(options)),
      checkpointer_(options_.checkpoint_dir, options_.id, options_.keep_checkpoints,
                    plan.job.train.checkpoint_failures, RescueDir(options_.rescue_dir),
                    CheckpointDeadlinesOf(plan.job)) {
  config_status_ = MakeServerConfig(plan, options_.id, &config_);
}

Status ParameterServer::Prepare() {
  stats_.updates_from.assign(config_.workers, 0);
  lives_.assign(config_.workers, WorkerLife());
  model_ = MakeConsistency(config_, &stats_);
  table_ = std::make_unique<ServerTable>(config_, TraitsOf(config_.consistency).takes_gradients);
  SHOAL_RETURN_IF_ERROR(table_->init_status());
  return options_.resume_dir.empty() ? Status::Ok() : Resume();
}

Status ParameterServer::Start() {
  SHOAL_RETURN_IF_ERROR(config_status_);
  {
    MutexLock lock(&mu_);
    SHOAL_RETURN_IF_ERROR(Prepare());
  }
  SHOAL_RETURN_IF_ERROR(checkpointer_.Start());
  if (!config_.sync_neighbours.empty()) {
    sync_ = std::make_unique<ServerSync>(config_, [this](auto* values) {
      MutexLock lock(&mu_);
      values->clear();
      for (const auto& [key, s] : table_->slices()) values->emplace_back(key, s.value);
    });
    sync_->Start();
  }
  // Room for every worker's parked requests (one per layer, and one more for
  // a get, a join or a done) plus a few tools.
  const int slots = config_.workers * (static_cast<int>(config_.layers.size()) + 2) + 8;
  SHOAL_RETURN_IF_ERROR(rpc_.Listen(
      config_.endpoint, slots,
      [this](int slot, const MessageView& req, uint32_t pipe) { Handle(slot, req, pipe); },
      [this](const Status& why) {
        MutexLock lock(&mu_);
        ++stats_.bad_requests;
        refusals_.Log("refused a request: " + why.ToString());
      },
      config_.tls, config_.max_request_bytes, [this](uint32_t pipe) { PipeClosed(pipe); }));
  return options_.in_worker ? rpc_.AddListener(InProcessEndpoint(config_.id)) : Status::Ok();
}

void ParameterServer::Stop(const Status& why) {
  MutexLock lock(&mu_);
  shutdown_ = true;
  stop_reason_ = why;
  changed_.SignalAll();
}

Status ParameterServer::Run() {
  mu_.Lock();
  last_request_ = last_connected_ = std::chrono::steady_clock::now();
  // Watched often enough that a parked done (deadline: half the timeout) is
  // answered well within the worker's own wait.
  const auto watch_every = std::chrono::milliseconds(std::clamp(config_.timeout_ms / 4, 1, 200));
  while (!finished_ && !shutdown_ && failure_.ok()) {
    changed_.WaitUntil(std::chrono::steady_clock::now() + watch_every);
    Watch(std::chrono::steady_clock::now());
  }
  // A BSP server stopped mid-step (shut down, or given up on) may hold a
  // layer a version ahead of the table: no file could name that state, so
  // the newest checkpoint stays the last consistent one. (Otherwise layers
  // are never in step with each other; their versions count updates taken.)
  const std::string ahead = TraitsOf(config_.consistency).one_version_a_step ? table_->LayerAhead() : "";
  // A failure mid-run was logged; the final one is what Run reports.
  static_cast<void>(checkpointer_.Flush());
  if (ahead.empty())
    Checkpoint();
  else
    Log("server " + std::to_string(config_.id) + " stops mid-step (" + ahead + "): no final checkpoint");
  // Nobody waits out a timeout for a server that has stopped. A server shut
  // down, or giving up on its peers, is going away: what it holds hears
  // `stopping` (exit 3, which a supervisor restarts), as a worker whose
  // request was not parked hears the connection close. Any other failure
  // (its hosting worker's bad input, a checkpoint it could not write) is an
  // error no restart mends. After a failure, a request that comes while it
  // drains hears the same (Handle).
  const Status why = failure_.ok() ? stop_reason_ : failure_;
  parked_.DropAll([&](const ParkedRequests::Parked& p) {
    mu_.AssertHeld();  // DropAll calls back on this thread
    ReplyStopping(p.slot, why);
  });
  const bool finished = finished_;
  const Status failure = failure_;
  mu_.Unlock();
  Status written = checkpointer_.Flush();
  if (sync_) sync_->Stop();
  if (finished) {
    rpc_.Drain(config_.timeout_ms, 0);
    AwaitWorkersHangUp();
  } else {
    // A moment for whoever is connected: a second, less where the plan's timeout is short.
    rpc_.Drain(config_.timeout_ms, std::min(1000, config_.timeout_ms / 4));
  }
  rpc_.Close();
  refusals_.Flush();
  return failure.ok() ? written : failure;
}

ServerStats ParameterServer::stats() {
  MutexLock lock(&mu_);
  return StatsNow();
}

ServerStats ParameterServer::StatsNow() const {
  ServerStats s = stats_;
  s.version = table_ ? table_->version() : 0;
  s.workers_done = table_ ? table_->done_count() : 0;
  s.steps_from = table_ ? table_->NextSteps() : std::vector<uint64_t>(config_.workers, 0);
  s.parked = parked_.size();
  s.checkpoints = checkpointer_.written();
  s.last_checkpoint_step = checkpointer_.last_step();
  const CheckpointFailures unwritten = checkpointer_.failures();
  s.checkpoint_failures = unwritten.total;
  s.last_checkpoint_failure = unwritten.last.ok() ? "" : unwritten.last.ToString();
  s.bytes_in = rpc_.bytes_received();
  s.bytes_out = rpc_.bytes_sent();
  s.handle_s = handling_.seconds();
  s.encode_s = rpc_.encode_seconds();
  s.decode_s = rpc_.decode_seconds();
  return s;
}

void ParameterServer::NoteCheckpointFailures() {
  if (!failure_.ok()) return;
  const CheckpointFailures unwritten = checkpointer_.failures();
  if (unwritten.stuck)
    failure_ = unwritten.last;
  else if (unwritten.gave_up)
    failure_ = Status::IOError(
        "gave up checkpointing into '" + options_.checkpoint_dir + "' after " +
        std::to_string(unwritten.in_a_row) +
        " failed writes in a row (train.checkpoint_failures); the last: " + unwritten.last.ToString());
  if (!failure_.ok()) changed_.SignalAll();
}

void ParameterServer::Watch(std::chrono::steady_clock::time_point now) {
  NoteCheckpointFailures();
  if (!failure_.ok()) return;
  // A read parked past its deadline is answered timed-out: its slot is free
  // again, and the reader (whose own wait is a little longer) hears for whom
  // it waited.
  // A done parked that long is told to ask again: its worker hears that the
  // server lives while the others train on, however long they take.
  // A worker's request parked while another says it is busy (evaluating) is
  // told so and asks again: the timeout bounds silence, not work.
  parked_.Expire(now, [&](const ParkedRequests::Parked& p) {
    mu_.AssertHeld();  // Expire calls back on this thread
    const std::string busy = p.sender == kToolSender ? "" : BusyPeer(p.sender, now);
    if (!busy.empty()) return ReplyBusy(p.slot, busy);
    if (p.done)
      return ReplyWait(p.slot, std::to_string(table_->done_count()) + " of " +
                                   std::to_string(config_.served) + " workers done");
    const std::string awaited = model_->Awaited(*table_, p.read);
    ReplyTimedOut(p.slot, "waited " + std::to_string(config_.timeout_ms) + " ms for version " +
                              std::to_string(p.read.at) + "; the table is at " +
                              std::to_string(table_->version()) + (awaited.empty() ? "" : ": " + awaited));
  });
  if (now - last_request_ >= std::chrono::milliseconds(config_.timeout_ms)) {
    failure_ = Status::Timeout("no request from any worker for " + std::to_string(config_.timeout_ms) +
                               " ms (at version " + std::to_string(table_->version()) + ", " +
                               std::to_string(table_->done_count()) + " of " +
                               std::to_string(config_.served) + " workers done)");
    return;
  }
  if (!any_joined_ || AnyWorkerConnected()) {
    last_connected_ = now;
  } else if (now - last_connected_ >= std::chrono::milliseconds(config_.lease_ms)) {
    failure_ =
        Status::Unavailable("no worker has been connected for " + std::to_string(config_.lease_ms) +
                            " ms (cluster.lease_ms): their supervisor has gone, and this server with it");
  }
}

void ParameterServer::Handle(int slot, const MessageView& req, uint32_t pipe) {
  MutexLock lock(&mu_);
  Timed timed(&handling_);
  ++requests_;
  // A done worker asking again is no progress: the watchdog still sees the others stall.
  if (!RepeatedDone(req.header)) last_request_ = std::chrono::steady_clock::now();
  changed_.SignalAll();
  if (req.header.plan_hash != config_.plan_hash_value) {
    ReplyError(slot, "request for plan " + HexU64(req.header.plan_hash) + ", this server runs plan " +
                         config_.plan_hash);
    return;
  }
  if (!failure_.ok()) return ReplyStopping(slot, failure_);
  switch (req.header.type) {
    case MsgType::kGet:
      return HandleGet(slot, req);
    case MsgType::kPut:
      return HandlePut(slot, req);
    case MsgType::kSync:
      return HandleSync(slot, req);
    case MsgType::kStats: {
      MsgHeader h{MsgType::kStats, config_.plan_hash_value, table_->version(),
                  static_cast<uint32_t>(config_.id)};
      rpc_.Reply(slot, h, {}, JsonText(StatsJson()));
      return;
    }
    case MsgType::kShutdown:
      // Only whoever started this server knows its incarnation: no other peer stops it.
      if (options_.incarnation != 0 && req.header.incarnation != options_.incarnation)
        return ReplyError(slot, "a shutdown names this server's incarnation (its supervisor knows it)");
      shutdown_ = true;
      changed_.SignalAll();
      return ReplyOk(slot);
    case MsgType::kUpdate:
    case MsgType::kUpdateGet:
    case MsgType::kJoin:
    case MsgType::kDone:
    case MsgType::kExchange:
    case MsgType::kMetric:
    case MsgType::kAlive:
    case MsgType::kCheckpoint:
      return HandleWorkerRequest(slot, req, pipe);
    default:
      ReplyError(slot, std::string("unexpected request type '") + MsgTypeName(req.header.type) + "'");
  }
}

void ParameterServer::ReplyWait(int slot, const std::string& why) {
  MsgHeader h{MsgType::kWait, config_.plan_hash_value, table_->version(), static_cast<uint32_t>(config_.id)};
  rpc_.Reply(slot, h, {}, why);
}

void ParameterServer::ReplyBusy(int slot, const std::string& why) {
  ++stats_.reads_busy;
  MsgHeader h{MsgType::kBusy, config_.plan_hash_value, table_->version(), static_cast<uint32_t>(config_.id)};
  rpc_.Reply(slot, h, {}, why);
}

void ParameterServer::ReplyTimedOut(int slot, const std::string& why) {
  ++stats_.reads_timed_out;
  refusals_.Log("server " + std::to_string(config_.id) + " gave up on a read: " + why);
  MsgHeader h{MsgType::kTimedOut, config_.plan_hash_value, table_->version(),
              static_cast<uint32_t>(config_.id)};
  rpc_.Reply(slot, h, {}, why);
}

void ParameterServer::CatchUp() {
  const uint64_t target = model_->TableVersion(*table_);
  while (table_->version() < target) {
    table_->Advance();
    ++stats_.updates_applied;
    if (sync_ && table_->version() % config_.sync_freq == 0) sync_->Trigger();
    if ((config_.checkpoint_every > 0 && table_->version() % config_.checkpoint_every == 0) ||
        checkpoints_asked_.erase(table_->version()) > 0)
      Checkpoint();
    CrashPoint(
        "server-version");  // tests: SHOAL_CRASH_AT=server-version:N dies once the table is at version N
  }
}

void ParameterServer::Checkpoint() {
  // Server groups hold copies of one table: the first group's are the checkpoints.
  if (!checkpointer_.enabled() || config_.group != 0) return;
  checkpointer_.Write(SnapshotTable(*table_, stats_.updates_received, metric_, checkpointer_.TakeSpare()));
  NoteCheckpointFailures();  // training stops at once on a disk given up on
}

void ParameterServer::ReplyParams(int slot, int worker, const std::vector<int>& layers, uint64_t step) {
  // A worker's own slices are what training exchanges every step: they
  // travel as cluster.wire says. A get of every slice (evaluation, tools)
  // takes the exact fp32 values.
  const ValueEncoding encoding = worker < 0 ? ValueEncoding::kF32 : config_.wire;
  std::vector<EntryRef> entries;
  auto add = [&](uint32_t key) {
    mu_.AssertHeld();
    const ServerTable::Slice& s = table_->slice(key);
    entries.push_back(
        {key, s.value.data(), static_cast<uint32_t>(s.value.size()), encoding, table_->AlsoAt(s)});
  };
  if (worker < 0)
    for (const auto& [key, s] : table_->slices()) add(key);
  else if (layers.empty())  // a worker's done, or its update of nothing here
    for (uint32_t key : config_.exchanged[worker]) add(key);
  else
    for (int index : layers)
      for (uint32_t key : config_.layers[index].held[worker]) add(key);
  MsgHeader h{MsgType::kReply, config_.plan_hash_value, step == ~0ull ? table_->VersionOf(layers) : step,
              static_cast<uint32_t>(config_.id)};
  rpc_.Reply(slot, h, entries);
}

void ParameterServer::ReplyOk(int slot) {
  MsgHeader h{MsgType::kReply, config_.plan_hash_value, table_->version(), static_cast<uint32_t>(config_.id)};
  rpc_.Reply(slot, h, {});
}

// Every refusal is counted and logged: a bad peer is visible, never fatal.
void ParameterServer::ReplyError(int slot, const std::string& why) {
  ++stats_.bad_requests;
  refusals_.Log("server " + std::to_string(config_.id) + " refused a request: " + why);
  MsgHeader h{MsgType::kError, config_.plan_hash_value, table_ ? table_->version() : 0,
              static_cast<uint32_t>(config_.id)};
  rpc_.Reply(slot, h, {}, why);
}

void ParameterServer::ReplyStopping(int slot, const Status& why) {
  const bool going_away = why.ok() || why.IsPeerFailure();
  MsgHeader h{going_away ? MsgType::kStopping : MsgType::kError, config_.plan_hash_value, table_->version(),
              static_cast<uint32_t>(config_.id)};
  rpc_.Reply(slot, h, {},
             "server " + std::to_string(config_.id) + " is stopping (" +
                 (why.ok() ? "shut down" : why.ToString()) + ")");
}

Status ParameterServer::Resume() {
  std::vector<std::string> found = ListCheckpoints(options_.resume_dir, config_.id);
  if (found.empty())
    return Status::InvalidArgument("no checkpoint of server " + std::to_string(config_.id) + " in '" +
                                   options_.resume_dir + "' to resume from");
  const std::string& path = found.back();
  shoal::Checkpoint ckpt;
  SHOAL_RETURN_IF_ERROR(ReadCheckpoint(path, &ckpt));
  SHOAL_RETURN_IF_ERROR(RestoreTable(ckpt, path, table_.get()));
  stats_.updates_received = ckpt.updates;
  metric_ = ckpt.metric;
  Log("server " + std::to_string(config_.id) + " resumed from '" + path + "' at version " +
      std::to_string(ckpt.step));
  return Status::Ok();
}

nlohmann::json ParameterServer::Report() {
  MutexLock lock(&mu_);
  return StatsJson();
}

nlohmann::json ParameterServer::StatsJson() {
  nlohmann::json j = StatsToJson(StatsNow());
  j["server"] = config_.id;
  j["consistency"] = Name(config_.consistency);
  j["syncs_sent"] = sync_ ? sync_->sent() : 0;
  j["syncs_failed"] = sync_ ? sync_->failed() : 0;
  return j;
}

}  // namespace shoal
