// A worker's life as the parameter server sees it: its joins and
// incarnations, its connection, its done, and the last wait for it to hang
// up (docs/design.md: "Supervision").
#include <chrono>

#include "core/hash.h"
#include "ps/server.h"

namespace shoal {

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
    case MsgType::kAlive:
      return HandleAlive(slot, req);
    case MsgType::kCheckpoint:
      return HandleCheckpoint(slot, req);
    default:
      return HandleUpdate(slot, req);
  }
}

void ParameterServer::HandleAlive(int slot, const MessageView& req) {
  constexpr size_t kLongestWhat = 200;  // of the text, as the others' replies repeat it
  WorkerLife& life = lives_[req.header.sender];
  life.busy_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(config_.timeout_ms);
  life.busy_with = req.text.substr(0, kLongestWhat);
  ReplyOk(slot);
}

void ParameterServer::HandleCheckpoint(int slot, const MessageView& req) {
  // Every server passes each version of its table one at a time, so a version
  // still to come makes a set. Under BSP the asker knows the versions to come;
  // elsewhere it guesses from the versions the servers answer with, and a
  // server already past the guess writes nothing (an ask at 0 only asks).
  constexpr size_t kMostAsked = 64;  // what a worker asking too often can make this server hold
  if (req.header.step <= table_->version()) {
    if (config_.consistency == ConsistencyModel::kBsp)
      return ReplyError(slot, "a checkpoint at version " + std::to_string(req.header.step) +
                                  ", which this server has reached (it is at " +
                                  std::to_string(table_->version()) + ")");
    return ReplyOk(slot);
  }
  if (checkpoints_asked_.size() >= kMostAsked && !checkpoints_asked_.count(req.header.step))
    return ReplyError(slot, "a checkpoint at version " + std::to_string(req.header.step) + " while " +
                                std::to_string(kMostAsked) + " asked ones are still to come (the first at " +
                                std::to_string(*checkpoints_asked_.begin()) + ")");
  checkpoints_asked_.insert(req.header.step);
  ReplyOk(slot);
}

std::string ParameterServer::BusyPeer(uint32_t reader, std::chrono::steady_clock::time_point now) const {
  for (size_t w = 0; w < lives_.size(); ++w)
    if (w != reader && lives_[w].busy_until > now)
      return "worker " + std::to_string(w) + " is busy: " + lives_[w].busy_with;
  return "";
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
  life = WorkerLife{incarnation, pipe, !rpc_.Closed(pipe), {}, {}};  // a new life is not busy
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

void ParameterServer::PipeClosed(uint32_t pipe) {
  MutexLock lock(&mu_);
  // A worker whose connection has closed (a killed process's, too) is busy no
  // more: its last word must not keep the others' waits asking again.
  for (WorkerLife& life : lives_)
    if (life.pipe == pipe) {
      life.connected = false;
      life.busy_until = {};
    }
  changed_.SignalAll();  // AwaitWorkersHangUp
}

bool ParameterServer::AnyWorkerConnected() const {
  for (int w = 0; w < config_.workers; ++w)
    if (config_.serves[w] && lives_[w].connected) return true;
  return false;
}

void ParameterServer::AwaitWorkersHangUp() {
  MutexLock lock(&mu_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(config_.timeout_ms);
  while (AnyWorkerConnected() && changed_.WaitUntil(deadline)) {
  }
}

}  // namespace shoal
