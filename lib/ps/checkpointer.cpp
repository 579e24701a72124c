#include "ps/checkpointer.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>
#include <utility>

#include "ckpt/checkpoint_set.h"
#include "core/log.h"

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

Status Checkpointer::Start() {
  if (!enabled()) return Status::Ok();
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return Status::IOError("cannot create '" + dir_ + "': " + ec.message());
  // A write of this server's that never finished (it was killed) left its
  // temporary file; no one else writes this server's names.
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    std::error_code gone;
    if (IsUnfinishedCheckpoint(entry.path().filename().string(), server_) &&
        std::filesystem::remove(entry.path(), gone))
      Log("removed '" + entry.path().string() + "', a checkpoint write that never finished");
  }
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

Checkpoint Checkpointer::TakeSpare() {
  MutexLock lock(&mu_);
  return std::exchange(spare_, Checkpoint{});
}

void Checkpointer::Write(Checkpoint snapshot) {
  if (!enabled()) return;
  MutexLock lock(&mu_);
  while (pending_ && !stopping_) changed_.Wait();
  if (stopping_ || failures_.gave_up) return;
  pending_ = std::move(snapshot);
  changed_.SignalAll();
}

Status Checkpointer::Flush() {
  MutexLock lock(&mu_);
  while ((pending_ || writing_) && thread_.joinable()) changed_.Wait();
  return std::exchange(failure_, Status::Ok());
}

void Checkpointer::Stop() {
  {
    MutexLock lock(&mu_);
    if (!thread_.joinable()) return;
  }
  static_cast<void>(Flush());  // what failed was reported to whoever asked Flush
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    changed_.SignalAll();
  }
  thread_.join();
}

uint64_t Checkpointer::written() const {
  MutexLock lock(&mu_);
  return written_;
}

int64_t Checkpointer::last_step() const {
  MutexLock lock(&mu_);
  return last_step_;
}

CheckpointFailures Checkpointer::failures() const {
  MutexLock lock(&mu_);
  return failures_;
}

void Checkpointer::Loop() {
  // A failed write is tried again after a backoff that doubles, unless a
  // newer snapshot comes first and takes its place.
  constexpr auto kFirstBackoff = std::chrono::milliseconds(500);
  constexpr auto kLongestBackoff = std::chrono::seconds(30);
  std::optional<Checkpoint> failed;
  std::chrono::steady_clock::duration backoff = kFirstBackoff;
  std::chrono::steady_clock::time_point retry_at;
  MutexLock lock(&mu_);
  while (true) {
    while (!pending_ && !stopping_ && !(failed && std::chrono::steady_clock::now() >= retry_at)) {
      if (failed)
        changed_.WaitUntil(retry_at);
      else
        changed_.Wait();
    }
    if (stopping_ && !pending_) return;  // a failed snapshot is not tried again once stopping
    Checkpoint ckpt = pending_ ? std::move(*pending_) : std::move(*failed);
    pending_.reset();
    failed.reset();
    writing_ = true;
    changed_.SignalAll();  // room for the next snapshot while this one is written
    mu_.Unlock();
    Status s = WriteAndPrune(ckpt);
    mu_.Lock();
    writing_ = false;
    if (s.ok()) {
      ++written_;
      last_step_ = static_cast<int64_t>(ckpt.step);
      failures_.in_a_row = 0;
      backoff = kFirstBackoff;
      spare_ = std::move(ckpt);
    } else {
      if (failure_.ok()) failure_ = s;
      ++failures_.in_a_row;
      ++failures_.total;
      failures_.last = s;
      Log("server " + std::to_string(server_) + ": checkpoint of step " + std::to_string(ckpt.step) +
          " failed (" + std::to_string(failures_.in_a_row) + " of " + std::to_string(failures_allowed_) +
          " allowed in a row): " + s.ToString());
      if (failures_.in_a_row >= failures_allowed_) {
        mu_.Unlock();
        Rescue(ckpt);
        mu_.Lock();
        failures_.gave_up = true;  // once the rescue is written, for whoever watches this
        spare_ = Checkpoint{};     // no snapshot is taken any more
        pending_.reset();
        changed_.SignalAll();
        return;
      }
      failed = std::move(ckpt);
      retry_at = std::chrono::steady_clock::now() + backoff;
      backoff = std::min<std::chrono::steady_clock::duration>(2 * backoff, kLongestBackoff);
    }
    changed_.SignalAll();
  }
}

void Checkpointer::Rescue(const Checkpoint& ckpt) {
  if (rescue_dir_.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(rescue_dir_, ec);
  const std::string path = CheckpointPath(rescue_dir_, server_, ckpt.step);
  Status s = ec ? Status::IOError("cannot create '" + rescue_dir_ + "': " + ec.message())
                : WriteCheckpoint(path, ckpt);
  Log(s.ok() ? "server " + std::to_string(server_) + ": wrote step " + std::to_string(ckpt.step) +
                   "'s checkpoint, which '" + dir_ + "' could not take, to '" + path + "'"
             : "server " + std::to_string(server_) + ": cannot rescue step " + std::to_string(ckpt.step) +
                   "'s checkpoint either: " + s.ToString());
}

Status Checkpointer::WriteAndPrune(const Checkpoint& ckpt) {
  const std::string written = CheckpointPath(dir_, server_, ckpt.step);
  SHOAL_RETURN_IF_ERROR(WriteCheckpoint(written, ckpt));
  // The rotation is this plan's: a file of another plan (another run given
  // the same directory) or one whose header cannot be read is not ours to
  // remove. Of ours, the newest by step stay, this one always, and so does
  // our part of the newest set every server has written, so that pruning
  // never takes the last whole model. Steps, not file times: a clock that
  // moves does not change which are newest.
  CheckpointDir scan;
  if (!ScanCheckpointDir(dir_, &scan).ok()) return Status::Ok();  // nothing to prune by
  std::vector<std::string> ours;                                  // newest first
  bool whole_seen = false;
  for (auto set = scan.steps.rbegin(); set != scan.steps.rend(); ++set) {
    const bool whole = !whole_seen && set->complete() && set->files.front().plan_hash == ckpt.plan_hash;
    whole_seen = whole_seen || whole;
    for (const CheckpointInfo& f : set->files)
      if (f.server == server_ && f.error.empty() && f.plan_hash == ckpt.plan_hash && f.path != written &&
          !whole)
        ours.push_back(f.path);
  }
  for (size_t i = static_cast<size_t>(std::max(keep_ - 1, 0)); i < ours.size(); ++i) {
    std::error_code ec;  // report, never throw
    if (!std::filesystem::remove(ours[i], ec) && ec) Log("cannot prune '" + ours[i] + "': " + ec.message());
  }
  return Status::Ok();
}

}  // namespace shoal
