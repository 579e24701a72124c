#include "train/param_table.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>
#include <utility>

#include "core/fault_injection.h"
#include "core/log.h"
#include "core/process.h"
#include "plan/lanes.h"
#include "plan/partition.h"
#include "ps/param_init.h"

namespace shoal {

Keepalive::Keepalive(std::vector<std::unique_ptr<RpcClient>> clients, MsgHeader header, std::string what,
                     int timeout_ms)
    : clients_(std::move(clients)), header_(header), every_(std::max(timeout_ms / 4, 1)) {
  header_.type = MsgType::kAlive;
  if (!what.empty()) {
    // Busy already for a quarter timeout: the first word goes at once.
    MutexLock lock(&mu_);
    busy_ = true;
    what_ = std::move(what);
    since_ = std::chrono::steady_clock::now() - every_;
  }
  thread_ = std::thread([this] { Run(); });
}

Keepalive::~Keepalive() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
    stop_cv_.SignalAll();
  }
  thread_.join();
}

void Keepalive::Begin(std::string what) {
  MutexLock lock(&mu_);
  busy_ = true;
  what_ = std::move(what);
  since_ = std::chrono::steady_clock::now();
}

void Keepalive::End() {
  MutexLock lock(&mu_);
  busy_ = false;
}

Keepalive::Pause::Pause(Keepalive* keepalive) : keepalive_(keepalive) {
  if (!keepalive_) return;
  MutexLock lock(&keepalive_->mu_);
  ++keepalive_->pauses_;
}

Keepalive::Pause::~Pause() {
  if (!keepalive_) return;
  MutexLock lock(&keepalive_->mu_);
  --keepalive_->pauses_;
}

void Keepalive::Run() {
  for (;;) {
    std::string what;
    {
      MutexLock lock(&mu_);
      if (stop_) return;
      if (busy_ && pauses_ == 0 && std::chrono::steady_clock::now() - since_ >= every_) what = what_;
    }
    if (!what.empty()) Tell(what);
    MutexLock lock(&mu_);
    const auto next = std::chrono::steady_clock::now() + every_;
    while (!stop_ && stop_cv_.WaitUntil(next)) {
    }
    if (stop_) return;
  }
}

void Keepalive::Tell(const std::string& what) {
  // Every server at once: one that is slow to answer does not hold up the others.
  std::vector<Status> sent;
  for (auto& client : clients_) sent.push_back(client->Send(header_, {}, what));
  for (size_t s = 0; s < clients_.size(); ++s) {
    Reply reply;
    const Status answered = sent[s].ok() ? clients_[s]->Receive(&reply) : sent[s];
    if (!answered.ok()) Log("a keepalive (" + what + ") failed: " + answered.ToString());
  }
}

// A standalone run has no groups: every gradient is the whole step's.
LocalTable::LocalTable(const Plan& plan, std::vector<Param*> params)
    : params_(std::move(params)), updater_(plan, params_, std::vector<float>(params_.size(), 1.0f)) {
  for (Param* p : params_) {
    std::vector<float> values;
    const ParamPlan& param = *plan.FindParam(p->name);
    Status init = InitialValues(param.name, param.shape, param.init, plan.job.train.seed, &values);
    if (!init.ok()) {
      if (init_status_.ok()) init_status_ = init;
      continue;
    }
    std::memcpy(p->value.data(), values.data(), 4 * values.size());
  }
}

Status LocalTable::Push(uint64_t step, double) {
  updater_.Apply(step);
  return Status::Ok();
}

Status LocalTable::FetchAll(const std::vector<Param*>& whole, uint64_t) {
  for (size_t i = 0; i < params_.size(); ++i) whole.at(i)->value = params_[i]->value;
  return Status::Ok();
}

RemoteTable::RemoteTable(const Plan& plan, int worker, std::vector<Param*> params, int timeout_ms,
                         uint64_t incarnation)
    : plan_(plan),
      worker_(worker),
      timeout_ms_(timeout_ms),
      incarnation_(incarnation),
      plan_hash_(plan.hash_value()),
      servers_(ServersOf(plan, worker)),
      pieces_(servers_.size()),
      exchanged_(servers_.size()),
      overlap_(ExchangesByLayer(plan.job)) {
  std::map<std::string, Param*> by_name;
  for (Param* p : params) by_name[p->name] = p;
  const int rank = plan.workers.at(worker).rank;
  // Keys increase, as the servers list them.
  for (uint32_t key : KeysHeldBy(plan, worker)) {
    const SlicePlan& s = plan.slices[key];
    const size_t held_from = HeldFloats(plan, plan.params[s.param_index], rank).begin;
    const size_t local = std::find(servers_.begin(), servers_.end(), s.server) - servers_.begin();
    const Piece piece{s.key, by_name.at(s.param), s.offset - held_from, s.count};
    pieces_[local].push_back(piece);
    if (!plan.params[s.param_index].frozen()) exchanged_[local].push_back(piece);
  }
}

Status RemoteTable::Connect() {
  wire_ = plan_.job.cluster.wire;
  for (int id : servers_) {
    const ServerPlan& server = plan_.servers[id];
    TlsIdentity tls = TlsIdentityFor(plan_.job.cluster.tls_dir, "worker", worker_);
    tls.server_name = ServerCertificateName(server.id);
    clients_.push_back(std::make_unique<RpcClient>());
    clients_.back()->set_label("worker " + std::to_string(worker_));
    // The server this process hosts is reached without a socket.
    const bool here = id == ServerInWorker(plan_, worker_);
    SHOAL_RETURN_IF_ERROR(
        clients_.back()->Dial(here ? InProcessEndpoint(id) : server.endpoint, timeout_ms_, tls));
  }
  return overlap_ ? OpenLanes() : Status::Ok();
}

Status RemoteTable::OpenLanes() {
  for (size_t s = 0; s < exchanged_.size(); ++s) {
    if (exchanged_[s]
            .empty()) {  // a server where this worker exchanges nothing hears of each step all the same
      lanes_.push_back({static_cast<int>(s), {}, nullptr});
      continue;
    }
    // Pieces come by increasing key, so a layer's follow one another.
    std::vector<std::string> layers;
    std::vector<std::vector<Piece>> pieces;
    std::vector<size_t> floats;
    for (const Piece& p : exchanged_[s]) {
      const std::string& layer = LayerOfParam(plan_, plan_.params[plan_.slices[p.key].param_index]).name;
      if (layers.empty() || layers.back() != layer) {
        layers.push_back(layer);
        pieces.emplace_back();
        floats.push_back(0);
      }
      pieces.back().push_back(p);
      floats.back() += p.count;
    }
    for (const LaneRange& range : GroupLanes(floats, plan_.job.train.overlap_bucket_floats)) {
      lanes_of_layer_[layers[range.begin]].push_back(
          lanes_.size());  // its lowest layer: last back, first forward
      lanes_.push_back({static_cast<int>(s), {}, nullptr});
      for (size_t layer = range.begin; layer < range.end; ++layer)
        lanes_.back().pieces.insert(lanes_.back().pieces.end(), pieces[layer].begin(), pieces[layer].end());
    }
  }
  for (Lane& lane : lanes_) SHOAL_RETURN_IF_ERROR(clients_[lane.server]->Share(&lane.client));
  return Status::Ok();
}

// Crash tests (SHOAL_CRASH_AT=worker-between-sends:N[:file]) die before the
// N-th request of gradients, once every request before it has left: a
// worker killed between its sends to two servers, exactly.
void RemoteTable::CrashBetweenSends() {
  constexpr const char* kPoint = "worker-between-sends";
  if (!CrashPointArmed(kPoint)) return;
  for (auto& client : clients_) (void)client->WaitSent();
  for (Lane& lane : lanes_) (void)lane.client->WaitSent();
  CrashPoint(kPoint);
}

Status RemoteTable::SendLane(Lane& lane, uint64_t step) {
  std::vector<EntryRef> entries;
  for (const auto& p : lane.pieces) {
    entries.push_back({p.key, p.param->grad.data() + p.offset, static_cast<uint32_t>(p.count), wire_});
    bytes_sent_ += p.count * BytesPerValue(wire_);
  }
  MsgHeader h{MsgType::kUpdateGet, plan_hash_, step, static_cast<uint32_t>(worker_), incarnation_};
  CrashBetweenSends();
  SHOAL_RETURN_IF_ERROR(TimedSend(lane.client.get(), h, entries));
  lane.in_flight = true;
  lane.step = step;
  return Status::Ok();
}

Status RemoteTable::CollectLane(Lane& lane) {
  if (!lane.in_flight) return Status::Ok();
  lane.in_flight = false;
  Reply reply;
  // Asked again, the server drops the repeated gradients and parks the read.
  SHOAL_RETURN_IF_ERROR(ReceiveWhileBusy(lane.client.get(), &reply, [&] {
    Status sent = SendLane(lane, lane.step);
    lane.in_flight = false;
    return sent;
  }));
  SHOAL_RETURN_IF_ERROR(Absorb(lane.server, reply.view(), lane.pieces, Take::kValues));
  for (const auto& e : reply.view().entries) bytes_received_ += e.value_bytes();
  lane.client->Recycle(&reply);
  return Status::Ok();
}

Status RemoteTable::Settle() {
  for (Lane& lane : lanes_) SHOAL_RETURN_IF_ERROR(CollectLane(lane));
  return Status::Ok();
}

Status RemoteTable::BeforeForward(const Layer& layer) {
  auto it = lanes_of_layer_.find(layer.name());
  if (it == lanes_of_layer_.end()) return Status::Ok();
  for (size_t lane : it->second) SHOAL_RETURN_IF_ERROR(CollectLane(lanes_[lane]));
  return Status::Ok();
}

Status RemoteTable::AfterBackward(const Layer& layer, uint64_t step) {
  auto it = lanes_of_layer_.find(layer.name());
  if (it == lanes_of_layer_.end()) return Status::Ok();
  for (size_t lane : it->second) SHOAL_RETURN_IF_ERROR(SendLane(lanes_[lane], step));
  return Status::Ok();
}

Status RemoteTable::SendTo(size_t server, const Request& r) {
  const MsgHeader h{r.type, plan_hash_, r.step, static_cast<uint32_t>(worker_), incarnation_};
  std::vector<EntryRef> entries;
  if (r.send != Send::kNothing)
    for (const auto& p : r.pieces[server]) {
      const Tensor& from = r.send == Send::kGrads ? p.param->grad : p.param->value;
      entries.push_back({p.key, from.data() + p.offset, static_cast<uint32_t>(p.count), wire_});
      bytes_sent_ += p.count * BytesPerValue(wire_);
    }
  if (r.send == Send::kGrads) CrashBetweenSends();
  return TimedSend(clients_[server].get(), h, entries, r.text);
}

Status RemoteTable::ReceiveAnswer(size_t s, const Request& r,
                                  std::chrono::steady_clock::time_point join_deadline, Reply* reply) {
  SHOAL_RETURN_IF_ERROR(TimedReceive(clients_[s].get(), reply));
  const std::string& endpoint = plan_.servers[servers_[s]].endpoint;
  uint64_t version = reply->view().header.step;
  auto moved = std::chrono::steady_clock::now();
  bool logged = false;
  while (reply->view().header.type == MsgType::kWait || reply->view().header.type == MsgType::kBusy) {
    const auto now = std::chrono::steady_clock::now();
    if (reply->view().header.type == MsgType::kBusy) {  // its keepalives bound the wait
      NoteBusy(*clients_[s], reply->view().text);
      moved = now;
    } else if (r.type == MsgType::kJoin) {
      if (now > join_deadline)
        return Status::InvalidArgument("server '" + endpoint + "' refused 'join' for " +
                                       std::to_string(RpcClient::kLostAfter.count()) +
                                       " s: " + reply->view().text);
      if (!std::exchange(logged, true))
        Log("worker " + std::to_string(worker_) + ": server '" + endpoint + "' says '" + reply->view().text +
            "'; asking again for up to " + std::to_string(RpcClient::kLostAfter.count()) +
            " s (the server may not have heard yet that the previous life ended)");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } else if (reply->view().header.step != version) {
      version = reply->view().header.step;
      moved = now;
    } else if (now - moved > std::chrono::milliseconds(timeout_ms_)) {
      return Status::Timeout("server '" + endpoint + "' has stayed at version " + std::to_string(version) +
                             " for " + std::to_string(timeout_ms_) + " ms answering " + MsgTypeName(r.type) +
                             " with 'wait' (" + reply->view().text + ")");
    }
    clients_[s]->Recycle(reply);
    SHOAL_RETURN_IF_ERROR(SendTo(s, r));
    SHOAL_RETURN_IF_ERROR(TimedReceive(clients_[s].get(), reply));
  }
  return Status::Ok();
}

Status RemoteTable::RoundTrip(const Request& r, std::vector<uint64_t>* steps) {
  for (size_t s = 0; s < clients_.size(); ++s) SHOAL_RETURN_IF_ERROR(SendTo(s, r));
  // A server's news of a previous life's end may lag, but not past kLostAfter
  // (then another process has the id).
  const auto join_deadline = std::chrono::steady_clock::now() + RpcClient::kLostAfter;
  for (size_t s = 0; s < clients_.size(); ++s) {
    Reply reply;
    SHOAL_RETURN_IF_ERROR(ReceiveAnswer(s, r, join_deadline, &reply));
    if (r.take != Take::kNothing) {
      SHOAL_RETURN_IF_ERROR(Absorb(static_cast<int>(s), reply.view(), r.pieces[s], r.take));
      for (const auto& e : reply.view().entries) bytes_received_ += e.value_bytes();
    }
    if (steps) steps->push_back(reply.view().header.step);
    clients_[s]->Recycle(&reply);
  }
  return Status::Ok();
}

Status RemoteTable::TimedSend(RpcClient* client, const MsgHeader& header,
                              const std::vector<EntryRef>& entries, const std::string& text) {
  Timed timed(&encoding_);
  return client->Send(header, entries, text);
}

Status RemoteTable::TimedReceive(RpcClient* client, Reply* reply) {
  Timed timed(&waiting_);
  const Keepalive::Pause waits(computing_.get());
  return client->Receive(reply);
}

Status RemoteTable::ReceiveWhileBusy(RpcClient* client, Reply* reply, const std::function<Status()>& again) {
  const Keepalive::Pause waits(computing_.get());  // asking again is waiting too
  SHOAL_RETURN_IF_ERROR(TimedReceive(client, reply));
  while (reply->view().header.type == MsgType::kBusy) {
    NoteBusy(*client, reply->view().text);
    client->Recycle(reply);
    SHOAL_RETURN_IF_ERROR(again());
    SHOAL_RETURN_IF_ERROR(TimedReceive(client, reply));
  }
  return Status::Ok();
}

void RemoteTable::NoteBusy(const RpcClient& client, const std::string& why) {
  if (why == busy_noted_) return;
  busy_noted_ = why;
  Log("worker " + std::to_string(worker_) + ": server '" + client.endpoint() + "' says " + why +
      "; asking again while it is");
}

void RemoteTable::Computing(uint64_t step) {
  if (!computing_made_) {
    computing_made_ = true;
    computing_ = KeepBusy("");
  }
  if (computing_) computing_->Begin("computing step " + std::to_string(step));
}

void RemoteTable::Computed() {
  if (computing_) computing_->End();
}

std::unique_ptr<Keepalive> RemoteTable::KeepBusy(const std::string& what) {
  std::vector<std::unique_ptr<RpcClient>> clients(clients_.size());
  for (size_t s = 0; s < clients_.size(); ++s)
    if (!clients_[s]->Share(&clients[s]).ok()) return nullptr;  // the next request says why
  return std::make_unique<Keepalive>(
      std::move(clients),
      MsgHeader{MsgType::kAlive, plan_hash_, 0, static_cast<uint32_t>(worker_), incarnation_}, what,
      timeout_ms_);
}

Status RemoteTable::Absorb(int server, const MessageView& reply, const std::vector<Piece>& pieces,
                           Take take) {
  Timed timed(&decoding_);
  const std::string& endpoint = plan_.servers[servers_[server]].endpoint;
  if (reply.header.plan_hash != plan_hash_)
    return Status::InvalidArgument("server '" + endpoint + "' answered for another plan");
  if (reply.entries.size() != pieces.size())
    return Status::Corruption("server '" + endpoint + "' sent " + std::to_string(reply.entries.size()) +
                              " slices, the plan gives it " + std::to_string(pieces.size()));
  // Both sides list slices by increasing key.
  for (size_t i = 0; i < pieces.size(); ++i) {
    const EntryView& e = reply.entries[i];
    if (e.key != pieces[i].key || e.count != pieces[i].count)
      return Status::Corruption("server '" + endpoint + "' sent slice " + std::to_string(e.key) +
                                " where the plan has slice " + std::to_string(pieces[i].key));
    float* values = pieces[i].param->value.data() + pieces[i].offset;
    if (take == Take::kValues) {
      CopyValues(e, values);
      continue;
    }
    differences_.resize(e.count);
    CopyValues(e, differences_.data());
    for (uint32_t j = 0; j < e.count; ++j) values[j] -= differences_[j];
  }
  return Status::Ok();
}

Status RemoteTable::Join(uint64_t* step) {
  std::vector<uint64_t> steps;
  SHOAL_RETURN_IF_ERROR(
      RoundTrip({MsgType::kJoin, kJoinWhereTheServerIs, pieces_, Send::kNothing, Take::kValues, ""}, &steps));
  // Servers agree unless this worker died between its sends to them; then
  // the earliest step is repeated (the servers past it drop the repeat), on
  // the values every server had at that step: the ones past it are asked again.
  *step = *std::min_element(steps.begin(), steps.end());
  for (size_t s = 0; s < clients_.size(); ++s) {
    if (steps[s] == *step) continue;
    Reply reply;
    SHOAL_RETURN_IF_ERROR(clients_[s]->Call(
        {MsgType::kJoin, plan_hash_, *step, static_cast<uint32_t>(worker_), incarnation_}, {}, &reply));
    if (reply.view().header.type != MsgType::kReply)  // another life took the id since the first join
      return Status::InvalidArgument("server '" + clients_[s]->endpoint() + "' answered the join at step " +
                                     std::to_string(*step) + " with '" +
                                     MsgTypeName(reply.view().header.type) + "': " + reply.view().text);
    SHOAL_RETURN_IF_ERROR(Absorb(static_cast<int>(s), reply.view(), pieces_[s], Take::kValues));
  }
  return Status::Ok();
}

Status RemoteTable::Report(const std::string& metric) {
  return RoundTrip({MsgType::kMetric, 0, pieces_, Send::kNothing, Take::kNothing, metric});
}

Status RemoteTable::CheckpointAt(uint64_t version, std::vector<uint64_t>* versions) {
  versions->clear();
  return RoundTrip({MsgType::kCheckpoint, version, pieces_, Send::kNothing, Take::kNothing, ""}, versions);
}

Status RemoteTable::FetchAll(const std::vector<Param*>& whole, uint64_t version) {
  std::map<std::string, Param*> by_name;
  for (Param* p : whole) by_name[p->name] = p;
  // Under BSP the servers answer once they reach the version: a layer
  // another worker holds may still be on its way.
  MsgHeader h{MsgType::kGet, plan_hash_, version, static_cast<uint32_t>(worker_), incarnation_};
  for (size_t s = 0; s < clients_.size(); ++s) SHOAL_RETURN_IF_ERROR(TimedSend(clients_[s].get(), h, {}));
  for (size_t s = 0; s < clients_.size(); ++s) {
    std::vector<Piece> all;
    for (const auto& slice : plan_.slices)
      if (slice.server == servers_[s])
        all.push_back({slice.key, by_name.at(slice.param), slice.offset, slice.count});
    Reply reply;
    SHOAL_RETURN_IF_ERROR(
        ReceiveWhileBusy(clients_[s].get(), &reply, [&] { return TimedSend(clients_[s].get(), h, {}); }));
    SHOAL_RETURN_IF_ERROR(Absorb(static_cast<int>(s), reply.view(), all, Take::kValues));
  }
  return Status::Ok();
}

Status RemoteTable::Push(uint64_t step, double) {
  if (!overlap_)
    SHOAL_RETURN_IF_ERROR(
        RoundTrip({MsgType::kUpdateGet, step, exchanged_, Send::kGrads, Take::kValues, ""}));
  // Every layer went as backprop finished it (AfterBackward), unless one was
  // left out; the servers where this worker holds nothing hear of the step
  // now, their answer to the previous one taken first (one request at a time).
  for (Lane& lane : lanes_) {
    if (lane.in_flight && lane.step == step) continue;
    SHOAL_RETURN_IF_ERROR(CollectLane(lane));
    SHOAL_RETURN_IF_ERROR(SendLane(lane, step));
  }
  ++updates_sent_;
  return Status::Ok();
}

Status RemoteTable::Exchange(uint64_t step) {
  SHOAL_RETURN_IF_ERROR(
      RoundTrip({MsgType::kExchange, step, exchanged_, Send::kValues, Take::kDifference, ""}));
  ++updates_sent_;
  return Status::Ok();
}

Status RemoteTable::Finish() {
  SHOAL_RETURN_IF_ERROR(Settle());
  SHOAL_RETURN_IF_ERROR(RoundTrip({MsgType::kDone, 0, exchanged_, Send::kNothing, Take::kValues, ""}));
  computing_.reset();  // hang up now: the servers wait for it before they exit
  lanes_.clear();
  clients_.clear();
  return Status::Ok();
}

}  // namespace shoal
