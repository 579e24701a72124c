#include "ps/server.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "core/fault_injection.h"
#include "core/hash.h"
#include "core/json_text.h"
#include "plan/partition.h"

namespace shoal {

ParameterServer::ParameterServer(const Plan& plan, ServerOptions options)
    : options_(std::move(options)),
      checkpointer_(options_.checkpoint_dir, options_.id, options_.keep_checkpoints) {
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
  // error no restart mends.
  const Status why = failure_.ok() ? stop_reason_ : failure_;
  const bool going_away = why.ok() || why.IsPeerFailure();
  const std::string stopping = "server " + std::to_string(config_.id) + " is stopping (" +
                               (why.ok() ? "shut down" : why.ToString()) + ")";
  parked_.DropAll([&](const ParkedRequests::Parked& p) {
    mu_.AssertHeld();  // DropAll calls back on this thread
    MsgHeader h{going_away ? MsgType::kStopping : MsgType::kError, config_.plan_hash_value, table_->version(),
                static_cast<uint32_t>(config_.id)};
    rpc_.Reply(p.slot, h, {}, stopping);
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
    rpc_.Drain(config_.timeout_ms, 1000);  // a moment for whoever is connected
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
  s.bytes_in = rpc_.bytes_received();
  s.bytes_out = rpc_.bytes_sent();
  s.handle_s = handling_.seconds();
  s.encode_s = rpc_.encode_seconds();
  s.decode_s = rpc_.decode_seconds();
  return s;
}

void ParameterServer::Watch(std::chrono::steady_clock::time_point now) {
  // A read parked past its deadline is answered timed-out: its slot is free
  // again, and the reader (whose own wait is a little longer) hears for whom
  // it waited.
  // A done parked that long is told to ask again: its worker hears that the
  // server lives while the others train on, however long they take.
  parked_.Expire(now, [&](const ParkedRequests::Parked& p) {
    mu_.AssertHeld();  // Expire calls back on this thread
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

void ParameterServer::AwaitWorkersHangUp() {
  MutexLock lock(&mu_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(config_.timeout_ms);
  while (AnyWorkerConnected() && changed_.WaitUntil(deadline)) {
  }
}

bool ParameterServer::AnyWorkerConnected() const {
  for (int w = 0; w < config_.workers; ++w)
    if (config_.serves[w] && lives_[w].connected) return true;
  return false;
}

void ParameterServer::PipeClosed(uint32_t pipe) {
  MutexLock lock(&mu_);
  for (WorkerLife& life : lives_)
    if (life.pipe == pipe) life.connected = false;
  changed_.SignalAll();  // AwaitWorkersHangUp
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
      return HandleWorkerRequest(slot, req, pipe);
    default:
      ReplyError(slot, std::string("unexpected request type '") + MsgTypeName(req.header.type) + "'");
  }
}

void ParameterServer::HandleWorkerRequest(int slot, const MessageView& req, uint32_t pipe) {
  const uint32_t sender = req.header.sender;
  if (sender >= static_cast<uint32_t>(config_.workers))
    return ReplyError(slot, "sender " + std::to_string(sender) + " is not a worker of the plan (it has " +
                                std::to_string(config_.workers) + ")");
  if (!config_.serves[sender])
    return ReplyError(slot, "worker " + std::to_string(sender) + " is served by server group " +
                                std::to_string(config_.worker_server_group[sender]) +
                                ", this server is in group " + std::to_string(config_.group));
  if (req.header.type == MsgType::kJoin) return HandleJoin(slot, req, pipe);
  const Status incarnation = CheckIncarnation(req, pipe);
  if (!incarnation.ok()) return ReplyError(slot, incarnation.message());
  switch (req.header.type) {
    case MsgType::kDone:
      return HandleDone(slot, req);
    case MsgType::kExchange:
      return HandleExchange(slot, req);
    // The checkpoints keep the evaluations, and `dl-ckpt best` picks by them: a running worker's only.
    case MsgType::kMetric:
      return HandleMetric(slot, req);
    default:
      return HandleUpdate(slot, req);
  }
}

void ParameterServer::HandleGet(int slot, const MessageView& req) {
  ++stats_.gets;
  ReadOrPark(slot, Read{-1, req.header.step, {}}, req.header.sender);
}

void ParameterServer::ReadOrPark(int slot, const Read& read, uint32_t sender) {
  if (model_->Ready(*table_, read)) return Answer(slot, read);
  const Status may_wait = model_->CheckRead(*table_, read);
  if (!may_wait.ok()) return ReplyError(slot, may_wait.message());
  // A request waiting holds one of the slots: a worker has one per lane and
  // one more, a tool (not a worker) a few at most, so no peer can hold them all.
  const bool worker = sender < static_cast<uint32_t>(config_.workers);
  const size_t allowed = worker ? config_.layers.size() + 1 : kToolRequestsWaiting;
  if (parked_.CountFrom(worker ? sender : kToolSender) >= allowed)
    return ReplyError(slot, "sender " + std::to_string(sender) + " has " + std::to_string(allowed) +
                                " requests waiting already");
  model_->OnPark(read);
  parked_.Park({slot, read, false,
                ParkedRequests::Clock::now() + std::chrono::milliseconds(config_.timeout_ms),
                worker ? sender : kToolSender});
}

void ParameterServer::Answer(int slot, const Read& read) {
  model_->OnAnswer(*table_, read);
  ReplyParams(slot, read.worker, read.layers);
}

void ParameterServer::HandleUpdate(int slot, const MessageView& req) {
  const int sender = static_cast<int>(req.header.sender);
  const uint64_t step = req.header.step;
  if (!TraitsOf(config_.consistency).takes_gradients)
    return ReplyError(slot, std::string(MsgTypeName(req.header.type)) + " under consistency '" +
                                Name(config_.consistency) +
                                "': its workers send their parameters in an exchange");
  std::vector<int> layers;
  Status fits = table_->CheckHeldSlices(req, &layers);
  if (!fits.ok()) return ReplyError(slot, "update " + fits.message());
  fits = model_->CheckUpdate(*table_, sender, step, layers);
  if (!fits.ok()) return ReplyError(slot, fits.message());
  // Per layer: a step taken in already is a rejoined worker's repeat.
  const uint64_t clock = table_->NextStepOf(sender);
  bool took = false;
  // An update-get answered at once is encoded over its request: the update
  // writes the new values there as it makes them, and the reply copies nothing.
  table_->ValuesIntoRequest(req.header.type == MsgType::kUpdateGet);
  for (int index : layers) {
    if (model_->Repeated(*table_, index, sender, step)) continue;
    table_->layers()[index].updates_from[sender] = step + 1;
    model_->TakeUpdate(*table_, index, sender, step, table_->EntriesOf(req, index));
    took = true;
  }
  if (layers.empty() && step >= table_->empty_steps()[sender]) {
    table_->empty_steps()[sender] = step + 1;
    took = true;
  }
  if (took)
    ++stats_.updates_received;
  else
    ++stats_.updates_repeated;
  stats_.updates_from[sender] += table_->NextStepOf(sender) - clock;
  model_->AfterUpdate(*table_, [this] {
    mu_.AssertHeld();  // AfterUpdate calls back on this thread
    CatchUp();
  });
  // One round trip per step and lane: the reply carries the next version
  // of the layers updated, once the model lets it be read.
  if (req.header.type == MsgType::kUpdateGet)
    ReadOrPark(slot, Read{sender, step + 1, layers}, req.header.sender);
  else
    ReplyOk(slot);
  table_->ValuesIntoRequest(false);  // answered (the request's bytes are NNG's now) or parked
  ServeParked();
}

void ParameterServer::HandleExchange(int slot, const MessageView& req) {
  if (TraitsOf(config_.consistency).takes_gradients)
    return ReplyError(slot, std::string("an exchange needs consistency 'easgd'; this server runs '") +
                                Name(config_.consistency) + "'");
  std::vector<std::vector<float>> diffs;
  bool repeated = false;
  const Status taken = model_->Exchange(*table_, req, &diffs, &repeated);
  if (!taken.ok()) return ReplyError(slot, taken.message());
  if (repeated) {
    ++stats_.updates_repeated;
  } else {
    ++stats_.updates_received;
    ++stats_.updates_from[req.header.sender];
    CatchUp();
  }
  std::vector<EntryRef> entries;
  for (size_t i = 0; i < diffs.size(); ++i)
    entries.push_back({req.entries[i].key, diffs[i].data(), static_cast<uint32_t>(diffs[i].size())});
  MsgHeader h{MsgType::kReply, config_.plan_hash_value, table_->version(), static_cast<uint32_t>(config_.id)};
  rpc_.Reply(slot, h, entries);
}

void ParameterServer::HandlePut(int slot, const MessageView& req) {
  // Values set from outside the run: before it begins, never under it.
  if (any_joined_)
    return ReplyError(slot, "a put sets values before the first worker joins, not during a run");
  const Status fits = table_->CheckSlices(req);
  if (!fits.ok()) return ReplyError(slot, "put " + fits.message());
  for (const auto& e : req.entries) CopyValues(e, table_->slice(e.key).value.data());
  ReplyOk(slot);
}

// Distributed Hogwild (SINGA journal paper §5.2): a neighbouring server
// group's copy of this server's slices; this copy moves halfway toward it,
// so that repeated syncs bring the copies to their mean.
void ParameterServer::HandleSync(int slot, const MessageView& req) {
  const uint32_t from = req.header.sender - kServerSenderBase;
  if (req.header.sender < kServerSenderBase || from >= static_cast<uint32_t>(config_.servers) ||
      static_cast<int>(from) / config_.servers_per_group == config_.group)
    return ReplyError(
        slot, "sync from sender " + std::to_string(req.header.sender) + ", not a server of another group");
  const Status fits = table_->CheckSlices(req);
  if (!fits.ok()) return ReplyError(slot, "sync " + fits.message());
  std::vector<float> theirs;
  for (const auto& e : req.entries) {
    std::vector<float>& value = table_->slice(e.key).value;
    theirs.resize(e.count);
    CopyValues(e, theirs.data());
    for (uint32_t i = 0; i < e.count; ++i) value[i] = 0.5f * (value[i] + theirs[i]);
  }
  ++stats_.syncs_received;
  ReplyOk(slot);
}

void ParameterServer::HandleMetric(int slot, const MessageView& req) {
  nlohmann::json metric;
  if (!ParseJson(req.text, "a metric", &metric, 64u << 10).ok() || !metric.is_object())
    return ReplyError(slot, "a metric must be a JSON object of at most 64 KiB");
  metric_ = metric;
  ReplyOk(slot);
}

Status ParameterServer::CheckIncarnation(const MessageView& req, uint32_t pipe) {
  const uint32_t sender = req.header.sender;
  WorkerLife& life = lives_[sender];
  if (life.incarnation == 0)
    return Status::InvalidArgument("worker " + std::to_string(sender) +
                                   " has not joined (its first request is a join)");
  if (req.header.incarnation != life.incarnation)
    return Status::InvalidArgument("a request of incarnation " + HexU64(req.header.incarnation) +
                                   " of worker " + std::to_string(sender) + ", which is now incarnation " +
                                   HexU64(life.incarnation) + " (an old life of it, or another process)");
  life.pipe = pipe;
  life.connected = !rpc_.Closed(pipe);
  return Status::Ok();
}

void ParameterServer::HandleJoin(int slot, const MessageView& req, uint32_t pipe) {
  const int sender = static_cast<int>(req.header.sender);
  const uint64_t incarnation = req.header.incarnation;
  WorkerLife& life = lives_[sender];
  if (incarnation == 0)
    return ReplyError(slot, "worker " + std::to_string(sender) + " joins without an incarnation");
  const bool replaces = life.incarnation != 0 && life.incarnation != incarnation;
  if (replaces && life.connected) {
    // Two processes claim the id, or the old life's connection has closed and
    // the news has not reached us (NNG reports a closed pipe from a thread of
    // its own, later under load): the joiner asks again for a while (RemoteTable::Join).
    const std::string why = "worker " + std::to_string(sender) + " is running already as incarnation " +
                            HexU64(life.incarnation) + " (still connected); refusing incarnation " +
                            HexU64(incarnation) + ": two processes claim to be worker " +
                            std::to_string(sender);
    refusals_.Log("server " + std::to_string(config_.id) + " told a join to wait: " + why);
    return ReplyWait(slot, why);
  }
  // The values as of the step it is to train: the server's own, or the one
  // the worker asks for (where another server is, after a crash between
  // sends). A join this server cannot answer changes nothing: it takes the
  // id only with its answer.
  const uint64_t step =
      req.header.step == kJoinWhereTheServerIs ? model_->JoinStep(*table_, sender) : req.header.step;
  std::vector<EntryRef> entries;
  for (uint32_t key : config_.held[sender]) {
    const std::vector<float>* values = model_->ValuesAt(*table_, key, step);
    if (!values)
      return ReplyError(slot, "worker " + std::to_string(sender) + " joins at step " + std::to_string(step) +
                                  ", which this server cannot answer: layer '" +
                                  table_->layers()[table_->LayerOf(key)].spec->name + "' is at version " +
                                  std::to_string(table_->layers()[table_->LayerOf(key)].version));
    entries.push_back({key, values->data(), static_cast<uint32_t>(values->size()), config_.wire});
  }
  if (replaces) {
    Log("server " + std::to_string(config_.id) + ": worker " + std::to_string(sender) +
        " rejoins as incarnation " + HexU64(incarnation) + " (was " + HexU64(life.incarnation) + ")");
    // What the old life left waiting has nobody to answer, and would count against the new one's requests.
    parked_.DropFrom(sender, [&](const ParkedRequests::Parked& p) {
      mu_.AssertHeld();  // DropFrom calls back on this thread
      ReplyError(p.slot,
                 "worker " + std::to_string(sender) + " rejoined as incarnation " + HexU64(incarnation));
    });
  }
  life = {incarnation, pipe, !rpc_.Closed(pipe)};
  any_joined_ = true;
  MsgHeader h{MsgType::kReply, config_.plan_hash_value, step, static_cast<uint32_t>(config_.id)};
  rpc_.Reply(slot, h, entries);
}

void ParameterServer::HandleDone(int slot, const MessageView& req) {
  if (parked_.CountFrom(req.header.sender) > 0)
    return ReplyError(slot, "worker " + std::to_string(req.header.sender) + " has a request waiting already");
  table_->MarkDone(static_cast<int>(req.header.sender));
  // Answered when every worker is done, or told to ask again within half the
  // worker's own wait for an answer (the done's deadline).
  parked_.Park({slot, Read{static_cast<int>(req.header.sender), 0, {}}, true,
                ParkedRequests::Clock::now() + std::chrono::milliseconds(config_.timeout_ms / 2),
                req.header.sender});
  ServeParked();
}

bool ParameterServer::RepeatedDone(const MsgHeader& header) const {
  return header.type == MsgType::kDone && table_ && header.sender < static_cast<uint32_t>(config_.workers) &&
         table_->done()[header.sender];
}

void ParameterServer::ReplyWait(int slot, const std::string& why) {
  MsgHeader h{MsgType::kWait, config_.plan_hash_value, table_->version(), static_cast<uint32_t>(config_.id)};
  rpc_.Reply(slot, h, {}, why);
}

void ParameterServer::ReplyTimedOut(int slot, const std::string& why) {
  ++stats_.reads_timed_out;
  refusals_.Log("server " + std::to_string(config_.id) + " gave up on a read: " + why);
  MsgHeader h{MsgType::kTimedOut, config_.plan_hash_value, table_->version(),
              static_cast<uint32_t>(config_.id)};
  rpc_.Reply(slot, h, {}, why);
}

void ParameterServer::ServeParked() {
  const bool all_done = table_->done_count() == config_.served;
  const int answered_done = parked_.AnswerReady(
      [&](const ParkedRequests::Parked& p) {
        mu_.AssertHeld();  // AnswerReady calls back on this thread
        return p.done ? all_done : model_->Ready(*table_, p.read);
      },
      [&](const ParkedRequests::Parked& p) {
        mu_.AssertHeld();
        if (p.done)
          ReplyParams(p.slot, p.read.worker, {});
        else
          Answer(p.slot, p.read);
      });
  if (all_done && answered_done > 0) {
    finished_ = true;
    changed_.SignalAll();
  }
}

void ParameterServer::CatchUp() {
  const uint64_t target = model_->TableVersion(*table_);
  while (table_->version() < target) {
    table_->Advance();
    ++stats_.updates_applied;
    if (sync_ && table_->version() % config_.sync_freq == 0) sync_->Trigger();
    if (config_.checkpoint_every > 0 && table_->version() % config_.checkpoint_every == 0) Checkpoint();
    CrashPoint(
        "server-version");  // tests: SHOAL_CRASH_AT=server-version:N dies once the table is at version N
  }
}

void ParameterServer::Checkpoint() {
  // Server groups hold copies of one table: the first group's are the checkpoints.
  if (!checkpointer_.enabled() || config_.group != 0) return;
  checkpointer_.Write(SnapshotTable(*table_, stats_.updates_received, metric_));
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
