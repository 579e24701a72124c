#include "ps/server.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "ckpt/checkpoint.h"
#include "core/hash.h"
#include "plan/partition.h"
#include "ps/elastic.h"
#include "ps/param_init.h"
#include "ps/stale_sync.h"

namespace shoal {
namespace {

// "exp_avg, exp_avg_sq", or "none" for an updater without state.
std::string KeptState(const std::vector<std::string>& states) {
  std::string out;
  for (const auto& s : states) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "none" : out;
}

}  // namespace

ParameterServer::ParameterServer(const Plan& plan, ServerOptions options)
    : plan_(plan),
      options_(std::move(options)),
      updater_(UpdaterFromTrain(plan.job.train, static_cast<int>(plan.workers.size()))),
      plan_hash_(plan.hash_value()),
      workers_(static_cast<int>(plan.workers.size())),
      served_(0),
      group_(ServerGroupOfServer(plan, options_.id)),
      consistency_(ConsistencyNamed(plan.job.cluster.consistency)),
      bsp_(consistency_ == Consistency::kBsp),
      serves_(workers_, false),
      empty_steps_(workers_, 0),
      done_(workers_, false) {
  stats_.updates_from.assign(workers_, 0);
}

ParameterServer::Consistency ParameterServer::ConsistencyNamed(const std::string& name) {
  if (name == "async") return Consistency::kAsync;
  if (name == "ssp") return Consistency::kSsp;
  if (name == "easgd") return Consistency::kEasgd;
  return Consistency::kBsp;
}

const std::vector<std::string>& ParameterServer::StateNames() const {
  static const std::vector<std::string> kNone;
  return consistency_ == Consistency::kEasgd ? kNone : UpdaterStateNames(updater_.rule);
}

Status ParameterServer::Start() {
  if (options_.id < 0 || options_.id >= static_cast<int>(plan_.servers.size()))
    return Status::InvalidArgument("server id " + std::to_string(options_.id) + " is not in the plan (it has " +
                                   std::to_string(plan_.servers.size()) + " servers)");
  SHOAL_RETURN_IF_ERROR(EncodingNamed(plan_.job.cluster.wire, &wire_));
  for (const auto& param : plan_.params) {
    std::vector<float> full;
    bool initialised = false;
    for (const SlicePlan& sp : plan_.slices) {  // every server group's, not only the listed first one's
      const uint32_t key = sp.key;
      if (sp.server != options_.id || sp.param != param.name) continue;
      if (!initialised) InitializeParam(param, plan_.job.train.seed, &full);
      initialised = true;
      Slice s;
      s.key = key;
      s.value.assign(full.begin() + sp.offset, full.begin() + sp.offset + sp.count);
      // The centre of easgd takes no gradients: it needs no sum and no state.
      if (consistency_ != Consistency::kEasgd) {
        s.state = NewUpdaterState(updater_, sp.count);
        s.grad_sum.assign(sp.count, 0.0f);
      }
      slices_.emplace(key, std::move(s));
      // Parameters come in the net's order, so layers do too.
      const std::string& layer = LayerOfParam(plan_, param.name).name;
      if (layers_.empty() || layers_.back().name != layer) {
        layers_.emplace_back();
        Layer& l = layers_.back();
        l.name = layer;
        l.held.resize(workers_);
        l.updates_from.assign(workers_, 0);
        l.contributed.assign(workers_, false);
        l.waiting.resize(workers_);
      }
      layers_.back().keys.push_back(key);
      layer_of_[key] = static_cast<int>(layers_.size()) - 1;
    }
  }
  // Who holds what, worked out once per worker: how many hold each key
  // (HoldersPerKey), and which of this server's keys, of which layers, each worker sends.
  holders_.assign(plan_.slices.size(), 0);
  for (const auto& w : plan_.workers) {
    serves_[w.id] = ServerGroupOf(plan_, w.id) == group_;
    served_ += serves_[w.id];
    held_.emplace_back();
    for (uint32_t key : KeysHeldBy(plan_, w.id)) {
      ++holders_[key];
      if (!slices_.count(key)) continue;
      held_.back().push_back(key);
      layers_[layer_of_.at(key)].held[w.id].push_back(key);
    }
  }
  held_layers_.resize(workers_);
  for (size_t index = 0; index < layers_.size(); ++index) {
    Layer& l = layers_[index];
    for (int w = 0; w < workers_; ++w) {
      if (l.held[w].empty()) continue;
      ++l.holders;
      held_layers_[w].push_back(static_cast<int>(index));
    }
    SumInOrder(l);  // past the workers that hold none of it
  }
  if (plan_.job.cluster.nserver_groups > 1) {
    sync_ = std::make_unique<ServerSync>(plan_, options_.id, [this](auto* values) {
      std::lock_guard<std::mutex> lock(mu_);
      values->clear();
      for (const auto& [key, s] : slices_) values->emplace_back(key, s.value);
    });
    sync_->Start();
  }
  if (!options_.resume_dir.empty()) SHOAL_RETURN_IF_ERROR(Resume());
  if (!options_.checkpoint_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options_.checkpoint_dir, ec);
    if (ec) return Status::IOError("cannot create '" + options_.checkpoint_dir + "': " + ec.message());
  }
  // Room for every worker's parked requests (one per layer, and one more for
  // a get, a join or a done) plus a few tools.
  const int slots = workers_ * (static_cast<int>(layers_.size()) + 2) + 8;
  const std::string& endpoint = plan_.servers[options_.id].endpoint;
  return rpc_.Listen(
      endpoint, slots, [this](int slot, const MessageView& req) { Handle(slot, req); },
      [this](const Status& why) {
        std::lock_guard<std::mutex> lock(mu_);
        ++stats_.bad_requests;
        std::fprintf(stderr, "dl-server: refused a request: %s\n", why.ToString().c_str());
      },
      TlsIdentityFor(plan_.job.cluster.tls_dir, "server", options_.id));
}

Status ParameterServer::Run() {
  const auto timeout = std::chrono::milliseconds(plan_.job.cluster.timeout_ms);
  std::unique_lock<std::mutex> lock(mu_);
  while (!finished_ && !shutdown_) {
    uint64_t seen = requests_;
    changed_.wait_for(lock, timeout, [&] { return finished_ || shutdown_ || requests_ != seen; });
    if (!finished_ && !shutdown_ && requests_ == seen) {
      failure_ = Status::Timeout("no request from any worker for " +
                                 std::to_string(plan_.job.cluster.timeout_ms) + " ms (at version " +
                                 std::to_string(stats_.version) + ", " + std::to_string(done_count_) +
                                 " of " + std::to_string(served_) + " workers done)");
      break;
    }
  }
  // A BSP server stopped mid-step (shut down, or given up on) may hold a
  // layer a version ahead of the table: no file could name that state, so
  // the newest checkpoint stays the last consistent one. (Otherwise layers
  // are never in step with each other; their versions count updates taken.)
  const std::string ahead = bsp_ ? LayerAhead() : "";
  Status written;
  if (ahead.empty())
    written = Checkpoint();
  else
    std::fprintf(stderr, "dl-server: server %d stops mid-step (%s): no final checkpoint\n", options_.id,
                 ahead.c_str());
  // Nobody waits out a timeout for a server that has stopped.
  for (const auto& p : parked_) ReplyError(p.slot, "server " + std::to_string(options_.id) + " is stopping");
  parked_.clear();
  lock.unlock();
  if (sync_) sync_->Stop();
  // Let the last replies (the workers' final parameters) reach the workers
  // before the socket closes; they hang up once they have them.
  rpc_.Drain(plan_.job.cluster.timeout_ms, 1000);
  rpc_.Close();
  if (!failure_.ok()) return failure_;
  return written;
}

ServerStats ParameterServer::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void ParameterServer::Handle(int slot, const MessageView& req) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_;
  changed_.notify_all();
  if (req.header.plan_hash != plan_hash_) {
    ReplyError(slot, "request for plan " + HexU64(req.header.plan_hash) + ", this server runs plan " +
                         plan_.hash);
    return;
  }
  bool from_worker = req.header.sender < static_cast<uint32_t>(workers_);
  switch (req.header.type) {
    case MsgType::kGet: HandleGet(slot, req); return;
    case MsgType::kPut: HandlePut(slot, req); return;
    case MsgType::kStats: {
      MsgHeader h{MsgType::kStats, plan_hash_, stats_.version, static_cast<uint32_t>(options_.id)};
      rpc_.Reply(slot, h, {}, StatsJson().dump());
      return;
    }
    case MsgType::kShutdown:
      shutdown_ = true;
      changed_.notify_all();
      ReplyOk(slot);
      return;
    case MsgType::kSync: HandleSync(slot, req); return;
    case MsgType::kMetric: {
      nlohmann::json metric = nlohmann::json::parse(req.text, nullptr, false);
      if (metric.is_discarded() || !metric.is_object()) {
        ReplyError(slot, "a metric must be a JSON object");
        return;
      }
      metric_ = metric;
      ReplyOk(slot);
      return;
    }
    case MsgType::kUpdate:
    case MsgType::kUpdateGet:
    case MsgType::kJoin:
    case MsgType::kDone:
    case MsgType::kExchange:
      if (!from_worker) {
        ReplyError(slot, "sender " + std::to_string(req.header.sender) + " is not a worker of the plan (it has " +
                             std::to_string(workers_) + ")");
        return;
      }
      if (ServerGroupOf(plan_, static_cast<int>(req.header.sender)) != group_) {
        ReplyError(slot, "worker " + std::to_string(req.header.sender) + " is served by server group " +
                             std::to_string(ServerGroupOf(plan_, static_cast<int>(req.header.sender))) +
                             ", this server is in group " + std::to_string(group_));
        return;
      }
      if (req.header.type == MsgType::kDone) HandleDone(slot, req);
      else if (req.header.type == MsgType::kJoin) HandleJoin(slot, req);
      else if (req.header.type == MsgType::kExchange) HandleExchange(slot, req);
      else HandleUpdate(slot, req);
      return;
    default:
      ReplyError(slot, std::string("unexpected request type '") + MsgTypeName(req.header.type) + "'");
  }
}

void ParameterServer::HandleGet(int slot, const MessageView& req) {
  ++stats_.gets;
  if (consistency_ == Consistency::kSsp) {
    ReadAtClock(slot, -1, req.header.step, {});
    return;
  }
  if (bsp_ && req.header.step > stats_.version) {
    ++stats_.gets_waited;
    parked_.push_back({slot, req.header.step, false, -1, {}});
    return;
  }
  ReplyParams(slot, -1, {});
}

void ParameterServer::ReadAtClock(int slot, int worker, uint64_t clock, const std::vector<int>& layers) {
  const Parked read{slot, clock, false, worker, layers};
  if (Ready(read)) {
    Answer(read);
    return;
  }
  ++stats_.ssp_waits;
  parked_.push_back(read);
}

void ParameterServer::Answer(const Parked& p) {
  if (consistency_ == Consistency::kSsp && !p.done)
    stats_.max_staleness_served =
        std::max(stats_.max_staleness_served, SspStaleness(p.version, SlowestClock()));
  ReplyParams(p.slot, p.sender, p.layers);
}

bool ParameterServer::Ready(const Parked& p) const {
  if (p.done) return done_count_ == served_;
  if (consistency_ == Consistency::kSsp)
    return SspReadable(p.version, SlowestClock(), static_cast<uint64_t>(plan_.job.cluster.staleness));
  return p.version <= VersionOf(p.layers);
}

uint64_t ParameterServer::SlowestClock() const {
  std::vector<uint64_t> clocks(workers_);
  std::vector<bool> stopped(workers_);  // done, or another group's
  for (int w = 0; w < workers_; ++w) {
    clocks[w] = NextStepOf(w);
    stopped[w] = done_[w] || !serves_[w];
  }
  return shoal::SlowestClock(clocks, stopped);
}

void ParameterServer::HandleUpdate(int slot, const MessageView& req) {
  const uint32_t sender = req.header.sender;
  const uint64_t step = req.header.step;
  if (consistency_ == Consistency::kEasgd) {
    ReplyError(slot, std::string(MsgTypeName(req.header.type)) +
                         " under consistency 'easgd': its workers send their parameters in an exchange");
    return;
  }
  std::vector<int> layers;
  const std::string mismatch = MisheldSlices(req, &layers);
  if (!mismatch.empty()) {
    ReplyError(slot, "update " + mismatch);
    return;
  }
  // BSP: a worker sends a layer's step s once it has version s of the layer.
  if (bsp_ && step > VersionOf(layers)) {
    const std::string what = layers.empty()       ? "the table is"
                             : layers.size() == 1 ? "layer '" + layers_[layers[0]].name + "' is"
                                                  : "its layers are";
    ReplyError(slot, "update for step " + std::to_string(step) + " but " + what + " at version " +
                         std::to_string(VersionOf(layers)));
    return;
  }
  // A worker's clock counts its updates: one past it would skip a clock.
  if (consistency_ == Consistency::kSsp && step > NextStepOf(sender, layers)) {
    ReplyError(slot, "update for step " + std::to_string(step) + " but worker " + std::to_string(sender) +
                         "'s clock here is " + std::to_string(NextStepOf(sender, layers)));
    return;
  }
  // Per layer: BSP, the step is counted or applied already; otherwise a
  // worker's step k is its (k+1)-th update, so one below its count was taken
  // in already.
  const uint64_t clock = NextStepOf(sender);
  bool took = false;
  for (int index : layers) {
    Layer& layer = layers_[index];
    const bool repeated = bsp_ ? step < layer.version || layer.contributed[sender] : step < layer.updates_from[sender];
    if (repeated) continue;
    TakeUpdate(layer, sender, step, EntriesOf(req, index));
    took = true;
  }
  if (layers.empty() && step >= empty_steps_[sender]) {
    empty_steps_[sender] = step + 1;
    took = true;
  }
  if (took) ++stats_.updates_received;
  else ++stats_.updates_repeated;
  stats_.updates_from[sender] += NextStepOf(sender) - clock;
  if (bsp_) ApplyCompleteLayers();
  else CatchUpVersion();
  if (req.header.type == MsgType::kUpdateGet) {
    // One round trip per step and lane: the reply carries the next version
    // of the layers updated (under BSP, once every worker holding them has
    // sent the step; under SSP, read at the next clock).
    if (consistency_ == Consistency::kSsp)
      ReadAtClock(slot, static_cast<int>(sender), step + 1, layers);
    else if (bsp_ && VersionOf(layers) < step + 1)
      parked_.push_back({slot, step + 1, false, static_cast<int>(sender), layers});
    else
      ReplyParams(slot, static_cast<int>(sender), layers);
  } else {
    ReplyOk(slot);
  }
  ServeParked();
}

std::vector<const EntryView*> ParameterServer::EntriesOf(const MessageView& req, int index) const {
  std::vector<const EntryView*> entries;
  for (const auto& e : req.entries)
    if (layer_of_.at(e.key) == index) entries.push_back(&e);
  return entries;
}

void ParameterServer::TakeUpdate(Layer& layer, uint32_t sender, uint64_t step,
                                 const std::vector<const EntryView*>& entries) {
  layer.updates_from[sender] = step + 1;
  if (!bsp_) {
    // Applied at once, as one worker's share of the average.
    AddGradients(entries);
    for (const EntryView* e : entries)
      ApplySlice(slices_.at(e->key), static_cast<float>(holders_[e->key]) / served_, layer.version);
    ++layer.version;
    return;
  }
  layer.contributed[sender] = true;
  ++layer.contributors;
  if (static_cast<int>(sender) == layer.next_to_sum) {
    AddGradients(entries);
    ++layer.next_to_sum;
  } else {
    for (const EntryView* e : entries) {
      layer.waiting[sender].emplace_back(e->key, std::vector<float>(e->count));
      CopyValues(*e, layer.waiting[sender].back().second.data());
    }
  }
  SumInOrder(layer);
}

void ParameterServer::SumInOrder(Layer& layer) {
  for (; layer.next_to_sum < workers_; ++layer.next_to_sum) {
    const int w = layer.next_to_sum;
    if (layer.held[w].empty()) continue;  // nothing of this layer to wait for
    if (!layer.contributed[w]) return;
    for (const auto& [key, grad] : layer.waiting[w]) {
      std::vector<float>& sum = slices_.at(key).grad_sum;
      for (size_t i = 0; i < grad.size(); ++i) sum[i] += grad[i];
    }
    layer.waiting[w].clear();
  }
}

void ParameterServer::ApplyCompleteLayers() {
  // A layer whose step is complete waits for the table's version before it
  // applies, so no layer runs more than one version ahead (a layer applied
  // opens the way for the ones waiting behind it: hence the loop).
  for (bool applied = true; applied;) {
    applied = false;
    for (Layer& layer : layers_) {
      if (layer.holders == 0 || layer.contributors < layer.holders || layer.version != stats_.version) continue;
      for (uint32_t key : layer.keys) ApplySlice(slices_.at(key), 1.0f / served_, layer.version);
      ++layer.version;
      layer.contributors = 0;
      layer.next_to_sum = 0;
      layer.contributed.assign(workers_, false);
      SumInOrder(layer);
      applied = true;
    }
    CatchUpVersion();
  }
}

void ParameterServer::HandleSync(int slot, const MessageView& req) {
  const uint32_t from = req.header.sender - kServerSenderBase;
  std::string mismatch = MismatchedSlice(req);
  if (req.header.sender < kServerSenderBase || from >= plan_.servers.size() ||
      ServerGroupOfServer(plan_, static_cast<int>(from)) == group_)
    mismatch = "from sender " + std::to_string(req.header.sender) + ", not a server of another group";
  if (!mismatch.empty()) {
    ReplyError(slot, "sync " + mismatch);
    return;
  }
  // Halfway toward the neighbour's copy: repeated, copies meet at their mean.
  std::vector<float> theirs;
  for (const auto& e : req.entries) {
    std::vector<float>& value = slices_[e.key].value;
    theirs.resize(e.count);
    CopyValues(e, theirs.data());
    for (uint32_t i = 0; i < e.count; ++i) value[i] = 0.5f * (value[i] + theirs[i]);
  }
  ++stats_.syncs_received;
  ReplyOk(slot);
}

void ParameterServer::HandleJoin(int slot, const MessageView& req) {
  // BSP: every worker trains the table's current step; otherwise a worker
  // goes on after the last of its updates (easgd: exchanges) taken in.
  const int sender = static_cast<int>(req.header.sender);
  ReplyParams(slot, sender, {}, bsp_ ? stats_.version : NextStepOf(sender));
}

void ParameterServer::HandleExchange(int slot, const MessageView& req) {
  if (consistency_ != Consistency::kEasgd) {
    ReplyError(slot, "an exchange needs consistency 'easgd'; this server runs '" +
                         plan_.job.cluster.consistency + "'");
    return;
  }
  std::vector<int> layers;
  const std::string mismatch = MisheldSlices(req, &layers);
  if (!mismatch.empty()) {
    ReplyError(slot, "exchange " + mismatch);
    return;
  }
  const uint32_t sender = req.header.sender;
  const uint64_t step = req.header.step;
  // A rejoined worker repeating a step whose exchange was taken in gets a
  // difference of 0: it keeps its values and the centre is not pulled twice.
  const bool repeated = step < NextStepOf(sender, layers);
  std::vector<std::vector<float>> diffs;
  for (const auto& e : req.entries) {
    diffs.emplace_back(e.count, 0.0f);
    if (repeated) continue;
    CopyValues(e, diffs.back().data());
    ElasticExchange(static_cast<float>(plan_.job.cluster.easgd_alpha), &diffs.back(), &slices_[e.key].value);
  }
  if (repeated) {
    ++stats_.updates_repeated;
  } else {
    ++stats_.updates_received;
    ++stats_.updates_from[sender];
    for (int index : layers) {
      layers_[index].updates_from[sender] = step + 1;
      ++layers_[index].version;
    }
    if (layers.empty()) empty_steps_[sender] = step + 1;
    CatchUpVersion();
  }
  std::vector<EntryRef> entries;
  for (size_t i = 0; i < diffs.size(); ++i)
    entries.push_back({req.entries[i].key, diffs[i].data(), static_cast<uint32_t>(diffs[i].size())});
  MsgHeader h{MsgType::kReply, plan_hash_, stats_.version, static_cast<uint32_t>(options_.id)};
  rpc_.Reply(slot, h, entries);
}

void ParameterServer::AddGradients(const std::vector<const EntryView*>& entries) {
  std::vector<float> grad;  // fp32 whatever the wire carried: sums stay fp32
  for (const EntryView* e : entries) {
    std::vector<float>& sum = slices_.at(e->key).grad_sum;
    grad.resize(e->count);
    CopyValues(*e, grad.data());
    for (uint32_t i = 0; i < e->count; ++i) sum[i] += grad[i];
  }
}

void ParameterServer::ApplySlice(Slice& s, float scale, uint64_t version) {
  for (float& g : s.grad_sum) g *= scale;
  ApplyUpdate(updater_, version, s.value.size(), s.grad_sum.data(), s.value.data(), &s.state);
  std::fill(s.grad_sum.begin(), s.grad_sum.end(), 0.0f);
}

void ParameterServer::CatchUpVersion() {
  uint64_t slowest = ~0ull;
  for (const Layer& layer : layers_) slowest = std::min(slowest, layer.version);
  // Under BSP a worker holding nothing here is a step's barrier too; other
  // models count updates applied, which its empty ones are not.
  if (bsp_)
    for (int w = 0; w < workers_; ++w)
      if (serves_[w] && held_[w].empty()) slowest = std::min(slowest, empty_steps_[w]);
  while (stats_.version < slowest) AdvanceVersion();
}

void ParameterServer::AdvanceVersion() {
  ++stats_.version;
  ++stats_.updates_applied;
  if (sync_ && stats_.version % plan_.job.cluster.sync_freq == 0) sync_->Trigger();
  int every = plan_.job.train.checkpoint_every;
  if (every > 0 && stats_.version % every == 0) {
    Status s = Checkpoint();
    if (!s.ok()) std::fprintf(stderr, "dl-server: %s\n", s.ToString().c_str());
  }
}

std::string ParameterServer::MisheldSlices(const MessageView& req, std::vector<int>* layers) const {
  const uint32_t sender = req.header.sender;
  layers->clear();
  std::string mismatch = MismatchedSlice(req);  // every key is this server's from here on
  if (!mismatch.empty()) return mismatch;
  for (const auto& e : req.entries) {
    const int index = layer_of_.at(e.key);
    if (layers->empty() || layers->back() != index) layers->push_back(index);
  }
  if (layers->empty()) {
    if (held_[sender].empty()) return "";
    return "from worker " + std::to_string(sender) + " carries no slices; the plan gives it " +
           std::to_string(held_[sender].size()) + " on this server";
  }
  // Layers' keys follow one another, so the slices expected are each
  // touched layer's in turn.
  std::vector<uint32_t> expected;
  std::string names;
  for (int index : *layers) {
    const std::vector<uint32_t>& keys = layers_[index].held[sender];
    expected.insert(expected.end(), keys.begin(), keys.end());
    names += (names.empty() ? "'" : ", '") + layers_[index].name + "'";
  }
  bool same = req.entries.size() == expected.size();
  for (size_t i = 0; same && i < expected.size(); ++i) same = req.entries[i].key == expected[i];
  if (same) return "";
  return "from worker " + std::to_string(sender) + " carries " + std::to_string(req.entries.size()) +
         " slices of layer " + names + "; the plan gives it " + std::to_string(expected.size()) +
         " of them on this server (a request carries every slice it holds of each layer it touches)";
}

uint64_t ParameterServer::VersionOf(const std::vector<int>& layers) const {
  if (layers.empty()) return stats_.version;
  uint64_t version = ~0ull;
  for (int index : layers) version = std::min(version, layers_[index].version);
  return version;
}

std::string ParameterServer::LayerAhead() const {
  for (const Layer& layer : layers_)
    if (layer.version != stats_.version)
      return "layer '" + layer.name + "' is at version " + std::to_string(layer.version) + ", the table at " +
             std::to_string(stats_.version);
  return "";
}

uint64_t ParameterServer::NextStepOf(int worker, const std::vector<int>& layers) const {
  if (layers.empty()) return empty_steps_[worker];
  uint64_t next = ~0ull;
  for (int index : layers) next = std::min(next, layers_[index].updates_from[worker]);
  return next;
}

uint64_t ParameterServer::NextStepOf(int worker) const { return NextStepOf(worker, held_layers_[worker]); }

std::string ParameterServer::MismatchedSlice(const MessageView& req) const {
  for (const auto& e : req.entries) {
    auto it = slices_.find(e.key);
    if (it == slices_.end() || it->second.value.size() != e.count)
      return "slice " + std::to_string(e.key) + " of " + std::to_string(e.count) +
             " floats does not match this server's table";
  }
  return "";
}

void ParameterServer::HandlePut(int slot, const MessageView& req) {
  std::string mismatch = MismatchedSlice(req);
  if (!mismatch.empty()) {
    ReplyError(slot, "put " + mismatch);
    return;
  }
  for (const auto& e : req.entries) CopyValues(e, slices_.at(e.key).value.data());
  ReplyOk(slot);
}

void ParameterServer::HandleDone(int slot, const MessageView& req) {
  if (!done_[req.header.sender]) {
    done_[req.header.sender] = true;
    stats_.workers_done = ++done_count_;
  }
  parked_.push_back({slot, 0, true, static_cast<int>(req.header.sender), {}});
  ServeParked();
}

void ParameterServer::ServeParked() {
  std::vector<Parked> still;
  bool all_done = done_count_ == served_;
  int answered_done = 0;
  for (const auto& p : parked_) {
    if (!Ready(p)) {
      still.push_back(p);
      continue;
    }
    Answer(p);
    if (p.done) ++answered_done;
  }
  parked_.swap(still);
  if (all_done && answered_done > 0) {
    finished_ = true;
    changed_.notify_all();
  }
}

void ParameterServer::ReplyParams(int slot, int worker, const std::vector<int>& layers, uint64_t step) {
  // A worker's own slices are what training exchanges every step: they
  // travel as cluster.wire says. A get of every slice (evaluation, tools)
  // takes the exact fp32 values.
  const ValueEncoding encoding = worker < 0 ? ValueEncoding::kF32 : wire_;
  std::vector<EntryRef> entries;
  auto add = [&](uint32_t key) {
    const Slice& s = slices_.at(key);
    entries.push_back({key, s.value.data(), static_cast<uint32_t>(s.value.size()), encoding});
  };
  if (worker < 0)
    for (const auto& [key, s] : slices_) add(key);
  else if (layers.empty())
    for (uint32_t key : held_[worker]) add(key);
  else
    for (int index : layers)
      for (uint32_t key : layers_[index].held[worker]) add(key);
  MsgHeader h{MsgType::kReply, plan_hash_, step == ~0ull ? VersionOf(layers) : step,
              static_cast<uint32_t>(options_.id)};
  rpc_.Reply(slot, h, entries);
}

void ParameterServer::ReplyOk(int slot) {
  MsgHeader h{MsgType::kReply, plan_hash_, stats_.version, static_cast<uint32_t>(options_.id)};
  rpc_.Reply(slot, h, {});
}

// Every refusal is counted and logged: a bad peer is visible, never fatal.
void ParameterServer::ReplyError(int slot, const std::string& why) {
  ++stats_.bad_requests;
  std::fprintf(stderr, "dl-server: server %d refused a request: %s\n", options_.id, why.c_str());
  MsgHeader h{MsgType::kError, plan_hash_, stats_.version, static_cast<uint32_t>(options_.id)};
  rpc_.Reply(slot, h, {}, why);
}

Status ParameterServer::Resume() {
  std::vector<std::string> found = ListCheckpoints(options_.resume_dir, options_.id);
  if (found.empty())
    return Status::InvalidArgument("no checkpoint of server " + std::to_string(options_.id) + " in '" +
                                   options_.resume_dir + "' to resume from");
  shoal::Checkpoint ckpt;
  SHOAL_RETURN_IF_ERROR(ReadCheckpoint(found.back(), &ckpt));
  const std::string& path = found.back();
  if (ckpt.plan_hash != plan_.hash)
    return Status::InvalidArgument("'" + path + "' belongs to plan " + ckpt.plan_hash + ", not " + plan_.hash);
  // Every slice's value and each of the updater's buffers, once.
  const std::vector<std::string>& states = StateNames();
  const std::string keeper = consistency_ == Consistency::kEasgd
                                 ? "an easgd server (it keeps the centre's values only)"
                                 : "updater '" + std::string(UpdateRuleName(updater_.rule)) + "'";
  std::set<std::pair<uint32_t, std::string>> loaded;
  for (const auto& t : ckpt.tensors) {
    auto it = slices_.find(t.key);
    if (it == slices_.end() || it->second.value.size() != t.data.size() || plan_.slices[t.key].param != t.param)
      return Status::InvalidArgument("'" + path + "': tensor '" + t.name + "' does not match this server's slices");
    auto state = std::find(states.begin(), states.end(), t.role);
    if (t.role != "value" && state == states.end())
      return Status::InvalidArgument("'" + path + "': tensor '" + t.name + "' is state '" + t.role + "', which " +
                                     keeper + " does not keep (" + KeptState(states) + ")");
    if (!loaded.insert({t.key, t.role}).second)
      return Status::InvalidArgument("'" + path + "': tensor '" + t.name + "' is there twice");
    (t.role == "value" ? it->second.value : it->second.state[state - states.begin()]) = t.data;
  }
  const size_t needed = (1 + states.size()) * slices_.size();
  if (loaded.size() != needed)
    return Status::InvalidArgument("'" + path + "' holds " + std::to_string(loaded.size()) +
                                   " tensors, this server needs " + std::to_string(needed) +
                                   " (the value and the state of each slice: " + KeptState(states) + ")");
  stats_.version = ckpt.step;
  stats_.updates_received = ckpt.updates;
  for (Layer& layer : layers_) {
    layer.version = ckpt.step;
    if (ckpt.updates_from.size() == layer.updates_from.size()) layer.updates_from = ckpt.updates_from;
  }
  if (ckpt.updates_from.size() == empty_steps_.size()) empty_steps_ = ckpt.updates_from;
  metric_ = ckpt.metric;
  std::fprintf(stderr, "dl-server: server %d resumed from '%s' at version %llu\n", options_.id, path.c_str(),
               static_cast<unsigned long long>(ckpt.step));
  return Status::Ok();
}

Status ParameterServer::Checkpoint() {
  // Server groups hold copies of one table: the first group's are the checkpoints.
  if (options_.checkpoint_dir.empty() || group_ != 0) return Status::Ok();
  shoal::Checkpoint ckpt;
  ckpt.plan_hash = plan_.hash;
  ckpt.server = options_.id;
  ckpt.step = stats_.version;
  ckpt.updates = stats_.updates_received;
  ckpt.servers = plan_.job.cluster.nservers_per_group;
  for (int w = 0; w < workers_; ++w) ckpt.updates_from.push_back(NextStepOf(w));
  ckpt.metric = metric_;
  const std::vector<std::string>& states = StateNames();
  for (const auto& [key, s] : slices_) {
    const SlicePlan& sp = plan_.slices[key];
    // A parameter cut into slices names each piece by where it starts.
    std::string name = sp.param;
    if (plan_.FindParam(sp.param)->slices.size() > 1) name += "[" + std::to_string(sp.offset) + "]";
    const Shape& shape = plan_.FindParam(sp.param)->shape;
    ckpt.tensors.push_back({name, sp.param, "value", key, sp.offset, shape, s.value});
    for (size_t i = 0; i < states.size(); ++i)
      ckpt.tensors.push_back({name + "@" + states[i], sp.param, states[i], key, sp.offset, shape, s.state[i]});
  }
  std::string path = CheckpointPath(options_.checkpoint_dir, options_.id, ckpt.step);
  SHOAL_RETURN_IF_ERROR(WriteCheckpoint(path, ckpt));
  ++stats_.checkpoints;
  std::vector<std::string> all = ListCheckpoints(options_.checkpoint_dir, options_.id);
  for (size_t i = 0; i + options_.keep_checkpoints < all.size(); ++i) {
    std::error_code ec;  // runs on an NNG thread: report, never throw
    if (!std::filesystem::remove(all[i], ec) && ec)
      std::fprintf(stderr, "dl-server: cannot prune '%s': %s\n", all[i].c_str(), ec.message().c_str());
  }
  return Status::Ok();
}

nlohmann::json ParameterServer::Report() {
  std::lock_guard<std::mutex> lock(mu_);
  return StatsJson();
}

nlohmann::json ParameterServer::StatsJson() {
  nlohmann::json j = StatsToJson(stats_);
  j["server"] = options_.id;
  j["consistency"] = plan_.job.cluster.consistency;
  j["syncs_sent"] = sync_ ? sync_->sent() : 0;
  j["syncs_failed"] = sync_ ? sync_->failed() : 0;
  return j;
}

}  // namespace shoal
