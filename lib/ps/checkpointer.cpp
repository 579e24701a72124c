#include "ps/checkpointer.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "ckpt/checkpoint_set.h"
#include "core/log.h"
#include "core/mutex.h"

namespace shoal {
namespace {

// "exp_avg, exp_avg_sq", or "none" for an updater without state.
std::string KeptState(const std::vector<std::string>& states) {
  std::string out;
  for (const auto& s : states) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "none" : out;
}

}  // namespace

Checkpoint SnapshotTable(const ServerTable& table, uint64_t updates_received, const nlohmann::json& metric,
                         Checkpoint reuse) {
  const ServerConfig& config = table.config();
  Checkpoint ckpt = std::move(reuse);
  ckpt.plan_hash = config.plan_hash;
  ckpt.server = config.id;
  ckpt.step = table.version();
  ckpt.updates = updates_received;
  ckpt.servers = config.servers_per_group;
  ckpt.updates_from = table.NextSteps();
  ckpt.metric = metric;
  const std::vector<std::string>& states = table.state_names();
  ckpt.tensors.resize(table.slices().size() * (1 + states.size()));
  auto next = ckpt.tensors.begin();
  auto take = [&](const SliceSpec& spec, uint32_t key, std::string name, const std::string& role,
                  const std::vector<float>& data) {
    CheckpointTensor& t = *next++;
    t.name = std::move(name);
    t.param = spec.param;
    t.role = role;
    t.key = key;
    t.offset = spec.offset;
    t.shape = spec.shape;
    t.data.assign(data.begin(), data.end());  // into the buffer it had, where that fits
  };
  for (const auto& [key, s] : table.slices()) {
    const SliceSpec& spec = *s.spec;
    take(spec, key, spec.name, "value", s.value);
    for (size_t i = 0; i < states.size(); ++i)
      take(spec, key, spec.name + "@" + states[i], states[i], s.state[i]);
  }
  return ckpt;
}

Status RestoreTable(const Checkpoint& ckpt, const std::string& path, ServerTable* table) {
  const ServerConfig& config = table->config();
  if (ckpt.plan_hash != config.plan_hash)
    return Status::InvalidArgument("'" + path + "' belongs to plan " + ckpt.plan_hash + ", not " +
                                   config.plan_hash);
  // A merged file (server -1) fits where its slices do (below); another server's never.
  if (ckpt.server != config.id && ckpt.server != -1)
    return Status::InvalidArgument("'" + path + "' is server " + std::to_string(ckpt.server) +
                                   "'s checkpoint, not " + std::to_string(config.id) + "'s");
  // A BSP version is a step; under the other models each worker's update (or exchange) makes one.
  const uint64_t versions_a_step =
      TraitsOf(config.consistency).one_version_a_step ? 1 : static_cast<uint64_t>(config.served);
  const uint64_t last = config.steps > 0 ? config.steps * versions_a_step : uint64_t{1} << 53;
  if (ckpt.step > last)
    return Status::InvalidArgument("'" + path + "': version " + std::to_string(ckpt.step) +
                                   " is past the run's last, " + std::to_string(last));
  if (!ckpt.updates_from.empty() && ckpt.updates_from.size() != static_cast<size_t>(config.workers))
    return Status::InvalidArgument("'" + path + "': updates_from lists " +
                                   std::to_string(ckpt.updates_from.size()) + " workers, the plan has " +
                                   std::to_string(config.workers));
  // Every slice's value and each of the updater's buffers, once.
  const std::vector<std::string>& states = table->state_names();
  const std::string keeper = TraitsOf(config.consistency).takes_gradients
                                 ? "updater '" + std::string(Name(config.updater.rule)) + "'"
                                 : "an easgd server (it keeps the centre's values only)";
  std::set<std::pair<uint32_t, std::string>> loaded;
  for (const auto& t : ckpt.tensors) {
    auto it = table->slices().find(t.key);
    if (it == table->slices().end() || it->second.value.size() != t.data.size() ||
        it->second.spec->param != t.param || t.shape != it->second.spec->shape)
      return Status::InvalidArgument("'" + path + "': tensor '" + t.name +
                                     "' does not match this server's slices");
    auto state = std::find(states.begin(), states.end(), t.role);
    if (t.role != "value" && state == states.end())
      return Status::InvalidArgument("'" + path + "': tensor '" + t.name + "' is state '" + t.role +
                                     "', which " + keeper + " does not keep (" + KeptState(states) + ")");
    if (!loaded.insert({t.key, t.role}).second)
      return Status::InvalidArgument("'" + path + "': tensor '" + t.name + "' is there twice");
    (t.role == "value" ? it->second.value : it->second.state[state - states.begin()]) = t.data;
  }
  const size_t needed = (1 + states.size()) * table->slices().size();
  if (loaded.size() != needed)
    return Status::InvalidArgument("'" + path + "' holds " + std::to_string(loaded.size()) +
                                   " tensors, this server needs " + std::to_string(needed) +
                                   " (the value and the state of each slice: " + KeptState(states) + ")");
  table->set_version(ckpt.step);
  for (ServerTable::Layer& layer : table->layers()) {
    layer.version = ckpt.step;
    if (ckpt.updates_from.size() == layer.updates_from.size()) layer.updates_from = ckpt.updates_from;
  }
  if (ckpt.updates_from.size() == table->empty_steps().size()) table->empty_steps() = ckpt.updates_from;
  return Status::Ok();
}

// Everything the writing thread reads and writes: it outlives the
// Checkpointer when the thread is stuck on a disk that does not answer.
struct Checkpointer::State {
  using Clock = std::chrono::steady_clock;

  State(std::string dir, int server, int keep, int failures_allowed, std::string rescue_dir,
        CheckpointDeadlines deadlines,
        std::function<Status(const std::string&, const Checkpoint&)> write_file)
      : dir(std::move(dir)),
        server(server),
        keep(keep),
        failures_allowed(failures_allowed),
        rescue_dir(std::move(rescue_dir)),
        deadlines(deadlines),
        write_file(std::move(write_file)) {}

  void Loop();
  Status WriteAndPrune(const Checkpoint& ckpt);
  // Writes `ckpt` into rescue_dir and says where, or why not; `mu` is
  // released while it writes.
  void Rescue(const Checkpoint& ckpt) REQUIRES(mu);
  // When the write going on becomes stuck (writing only).
  Clock::time_point StuckAt() const REQUIRES(mu) { return write_started + deadlines.write; }
  // Gives up once the write going on is past its deadline: whether it is.
  bool NoticeStuck(Clock::time_point now) REQUIRES(mu);
  // Counts `why`, step `step`'s, as a failed write: whether that makes
  // failures_allowed in a row (then the caller gives up).
  bool CountFailure(uint64_t step, const Status& why) REQUIRES(mu);
  // Gives up after failures in a row, rescuing `last`, the snapshot that
  // failed: no more snapshots are taken.
  void GiveUp(const Checkpoint& last) REQUIRES(mu);

  const std::string dir;
  const int server;
  const int keep;
  const int failures_allowed;
  const std::string rescue_dir;
  const CheckpointDeadlines deadlines;
  const std::function<Status(const std::string&, const Checkpoint&)> write_file;

  mutable Mutex mu;
  CondVar changed{&mu};
  std::optional<Checkpoint> pending GUARDED_BY(mu);
  Checkpoint spare GUARDED_BY(mu);  // written; its buffers wait for the next snapshot
  bool writing GUARDED_BY(mu) = false;
  uint64_t writing_step GUARDED_BY(mu) = 0;
  Clock::time_point write_started GUARDED_BY(mu);
  bool stopping GUARDED_BY(mu) = false;
  uint64_t written GUARDED_BY(mu) = 0;
  int64_t last_step GUARDED_BY(mu) = -1;
  Status failure GUARDED_BY(mu);  // the first since the last Flush
  CheckpointFailures failures GUARDED_BY(mu);
  std::optional<uint64_t> rescued GUARDED_BY(mu);  // the step last written into rescue_dir while stuck
};

Checkpointer::Checkpointer(std::string dir, int server, int keep, int failures_allowed,
                           std::string rescue_dir, CheckpointDeadlines deadlines,
                           std::function<Status(const std::string&, const Checkpoint&)> write_file)
    : state_(std::make_shared<State>(std::move(dir), server, keep, failures_allowed, std::move(rescue_dir),
                                     deadlines, std::move(write_file))) {}

bool Checkpointer::enabled() const { return !state_->dir.empty(); }

Status Checkpointer::Start() {
  if (!enabled()) return Status::Ok();
  const std::string& dir = state_->dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IOError("cannot create '" + dir + "': " + ec.message());
  // A write of this server's that never finished (it was killed) left its
  // temporary file; no one else writes this server's names.
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::error_code gone;
    if (IsUnfinishedCheckpoint(entry.path().filename().string(), state_->server) &&
        std::filesystem::remove(entry.path(), gone))
      Log("removed '" + entry.path().string() + "', a checkpoint write that never finished");
  }
  thread_ = std::thread([state = state_] { state->Loop(); });
  return Status::Ok();
}

Checkpoint Checkpointer::TakeSpare() {
  MutexLock lock(&state_->mu);
  return std::exchange(state_->spare, Checkpoint{});
}

void Checkpointer::Write(Checkpoint snapshot) {
  if (!enabled()) return;
  State& s = *state_;
  MutexLock lock(&s.mu);
  const auto handover_by = State::Clock::now() + s.deadlines.handover;
  while (s.pending && !s.stopping && !s.NoticeStuck(State::Clock::now()) && State::Clock::now() < handover_by)
    s.changed.WaitUntil(s.writing ? std::min(handover_by, s.StuckAt()) : handover_by);
  if (s.stopping) return;
  if (s.NoticeStuck(State::Clock::now())) {
    if (s.rescued == snapshot.step) return;  // the same version again: a server's final checkpoint
    s.rescued = snapshot.step;
    s.Rescue(snapshot);
    return;
  }
  if (s.failures.gave_up) return;
  if (s.pending) {
    const Status why =
        Status::Timeout("waited " + std::to_string(s.deadlines.handover.count()) + " ms for step " +
                        std::to_string(s.pending->step) + "'s to be taken up while step " +
                        std::to_string(s.writing_step) + "'s is written to '" + s.dir + "': not written");
    if (s.CountFailure(snapshot.step, why)) s.GiveUp(snapshot);
    return;
  }
  s.pending = std::move(snapshot);
  s.changed.SignalAll();
}

Status Checkpointer::Flush() {
  State& s = *state_;
  MutexLock lock(&s.mu);
  while ((s.pending || s.writing) && thread_.joinable() && !s.NoticeStuck(State::Clock::now())) {
    if (s.writing)
      s.changed.WaitUntil(s.StuckAt());
    else
      s.changed.Wait();
  }
  if (s.failures.stuck) return s.failures.last;
  return std::exchange(s.failure, Status::Ok());
}

void Checkpointer::Stop() {
  if (!thread_.joinable()) return;
  static_cast<void>(Flush());  // what failed was reported to whoever asked Flush
  bool stuck;
  {
    MutexLock lock(&state_->mu);
    state_->stopping = true;
    state_->changed.SignalAll();
    stuck = state_->failures.stuck && state_->writing;
  }
  if (stuck) {
    Log("server " + std::to_string(state_->server) + ": leaving the checkpoint write to '" + state_->dir +
        "' that does not end; its temporary file stays unfinished");
    thread_.detach();
  } else {
    thread_.join();
  }
}

uint64_t Checkpointer::written() const {
  MutexLock lock(&state_->mu);
  return state_->written;
}

int64_t Checkpointer::last_step() const {
  MutexLock lock(&state_->mu);
  return state_->last_step;
}

CheckpointFailures Checkpointer::failures() const {
  MutexLock lock(&state_->mu);
  state_->NoticeStuck(State::Clock::now());
  return state_->failures;
}

bool Checkpointer::State::NoticeStuck(Clock::time_point now) {
  if (failures.stuck) return true;
  if (!writing || now < StuckAt()) return false;
  std::ostringstream seconds;
  seconds << std::chrono::duration<double>(deadlines.write).count();
  failures.stuck = failures.gave_up = true;
  ++failures.total;
  failures.last = Status::IOError("step " + std::to_string(writing_step) + "'s checkpoint write to '" + dir +
                                  "' has not ended in " + seconds.str() +
                                  " s (train.checkpoint_timeout_s): the disk does not answer");
  if (failure.ok()) failure = failures.last;
  spare = Checkpoint{};
  Log("server " + std::to_string(server) + ": " + failures.last.message());
  changed.SignalAll();
  return true;
}

bool Checkpointer::State::CountFailure(uint64_t step, const Status& why) {
  if (failure.ok()) failure = why;
  ++failures.in_a_row;
  ++failures.total;
  failures.last = why;
  Log("server " + std::to_string(server) + ": checkpoint of step " + std::to_string(step) + " failed (" +
      std::to_string(failures.in_a_row) + " of " + std::to_string(failures_allowed) +
      " allowed in a row): " + why.ToString());
  return failures.in_a_row >= failures_allowed;
}

void Checkpointer::State::GiveUp(const Checkpoint& last) {
  Rescue(last);
  failures.gave_up = true;  // once the rescue is written, for whoever watches this
  spare = Checkpoint{};
  pending.reset();
  changed.SignalAll();
}

void Checkpointer::State::Loop() {
  // A failed write is tried again after a backoff that doubles, unless a
  // newer snapshot comes first and takes its place.
  constexpr auto kFirstBackoff = std::chrono::milliseconds(500);
  constexpr auto kLongestBackoff = std::chrono::seconds(30);
  std::optional<Checkpoint> failed;
  Clock::duration backoff = kFirstBackoff;
  Clock::time_point retry_at;
  MutexLock lock(&mu);
  while (true) {
    while (!pending && !stopping && !(failed && Clock::now() >= retry_at)) {
      if (failed)
        changed.WaitUntil(retry_at);
      else
        changed.Wait();
    }
    if (stopping && !pending) return;  // a failed snapshot is not tried again once stopping
    Checkpoint ckpt = pending ? std::move(*pending) : std::move(*failed);
    pending.reset();
    failed.reset();
    writing = true;
    writing_step = ckpt.step;
    write_started = Clock::now();
    changed.SignalAll();  // room for the next snapshot while this one is written
    mu.Unlock();
    Status s = WriteAndPrune(ckpt);
    mu.Lock();
    writing = false;
    changed.SignalAll();
    if (failures.stuck) return;  // given up while it wrote: the server has stopped counting on it
    if (s.ok()) {
      ++written;
      last_step = static_cast<int64_t>(ckpt.step);
      if (failures.gave_up) return;  // meanwhile, on snapshots that waited too long behind this one
      failures.in_a_row = 0;
      backoff = kFirstBackoff;
      spare = std::move(ckpt);
      continue;
    }
    if (CountFailure(ckpt.step, s)) {
      GiveUp(ckpt);
      return;
    }
    failed = std::move(ckpt);
    retry_at = Clock::now() + backoff;
    backoff = std::min<Clock::duration>(2 * backoff, kLongestBackoff);
  }
}

void Checkpointer::State::Rescue(const Checkpoint& ckpt) {
  if (rescue_dir.empty()) return;
  mu.Unlock();
  std::error_code ec;
  std::filesystem::create_directories(rescue_dir, ec);
  const std::string path = CheckpointPath(rescue_dir, server, ckpt.step);
  Status s =
      ec ? Status::IOError("cannot create '" + rescue_dir + "': " + ec.message()) : write_file(path, ckpt);
  Log(s.ok() ? "server " + std::to_string(server) + ": wrote step " + std::to_string(ckpt.step) +
                   "'s checkpoint, which '" + dir + "' could not take, to '" + path + "'"
             : "server " + std::to_string(server) + ": cannot rescue step " + std::to_string(ckpt.step) +
                   "'s checkpoint either: " + s.ToString());
  mu.Lock();
}

Status Checkpointer::State::WriteAndPrune(const Checkpoint& ckpt) {
  const std::string path = CheckpointPath(dir, server, ckpt.step);
  SHOAL_RETURN_IF_ERROR(write_file(path, ckpt));
  // The rotation is this plan's: a file of another plan (another run given
  // the same directory) or one whose header cannot be read is not ours to
  // remove. Of ours, the newest by step stay, this one always, and so does
  // our part of the newest set every server has written, so that pruning
  // never takes the last whole model. Steps, not file times: a clock that
  // moves does not change which are newest.
  CheckpointDir scan;
  if (!ScanCheckpointDir(dir, &scan).ok()) return Status::Ok();  // nothing to prune by
  std::vector<std::string> ours;                                 // newest first
  bool whole_seen = false;
  for (auto set = scan.steps.rbegin(); set != scan.steps.rend(); ++set) {
    const bool whole = !whole_seen && set->complete() && set->files.front().plan_hash == ckpt.plan_hash;
    whole_seen = whole_seen || whole;
    for (const CheckpointInfo& f : set->files)
      if (f.server == server && f.error.empty() && f.plan_hash == ckpt.plan_hash && f.path != path && !whole)
        ours.push_back(f.path);
  }
  for (size_t i = static_cast<size_t>(std::max(keep - 1, 0)); i < ours.size(); ++i) {
    std::error_code ec;  // report, never throw
    if (!std::filesystem::remove(ours[i], ec) && ec) Log("cannot prune '" + ours[i] + "': " + ec.message());
  }
  return Status::Ok();
}

}  // namespace shoal
