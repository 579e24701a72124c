// What the parameter server's requests do to its table: reads (answered at
// once or parked until the consistency model allows), updates, exchanges,
// puts, syncs between server groups, and reported evaluations.
#include <algorithm>
#include <chrono>

#include "core/json_text.h"
#include "ps/server.h"

namespace shoal {

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

}  // namespace shoal
