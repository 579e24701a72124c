// dl-server's core: one shard of the parameter table behind an RpcServer.
//
// Consistency is how requests are handled (SINGA Algorithms 3-4):
//  - bsp: an update of step t is summed until every worker's has arrived,
//    then averaged and applied once (version t -> t+1); a get for version v
//    waits until the table reaches it. With gradients averaged over workers,
//    W workers × batch B step exactly as one worker × batch W·B.
//  - async (Downpour): each update is applied as it arrives; gets answer at once.
//  - ssp (stale synchronous, GeePS): updates are applied as in async; a read
//    at clock c (an update-get of step c-1, or a get for c) waits until every
//    worker's clock is at least c − staleness (lib/ps/stale_sync.h).
//  - easgd (elastic averaging): the table is the centre; workers train
//    replicas of their own and now and then exchange (lib/ps/elastic.h):
//    no gradients and no updater here.
// In a hybrid plan a worker holds only some slices (lib/plan/partition.h):
// it sends their gradients and receives their values. Gradients are summed
// per slice and divided by the number of workers: a partitioned layer's
// gradient is computed over its whole group's records, so this is the
// average over every record either way.
// An update carries whole layers: for each layer it touches, every slice of
// it the sender holds here. A worker that overlaps communication with
// computation (train.overlap) sends one update-get per lane of layers as
// backprop produces them, the top lane first; otherwise one for all its
// layers. Each layer of the table keeps its own version, so under BSP a layer
// is applied, and its update-gets answered, as soon as every worker holding
// it has sent the step, while the workers are still computing the layers
// below. A layer runs at most one version ahead of the slowest (it waits for
// the table's version before it applies), so the table's version — its
// slowest layer's — names one consistent state, and that is what gets, joins
// and checkpoints see. A worker holding nothing here still takes part in
// every step with an empty update, as a barrier. Async, SSP and EASGD apply
// each layer's update (exchange) as it arrives; a worker's clock is the
// step after the last one whose every layer was taken in.
// A worker that rejoins after a crash asks where to go on (join) and repeats
// the step it was in: an update of a layer's step already counted or applied
// is dropped and answered as the first one was, so nothing is applied twice.
// An update-get is an update answered like a get of the next version of the
// layers it carries: one round trip per step and lane. Gradients may arrive
// as fp16 (cluster.wire) and are summed and applied in fp32; a worker's
// slices go back in the wire's encoding.
// A worker's `done` waits until every worker is done and is answered with
// the final parameters; then the server checkpoints and exits.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/rpc_server.h"
#include "plan/plan.h"
#include "ps/server_sync.h"
#include "ps/server_stats.h"
#include "ps/updater.h"

namespace shoal {

struct ServerOptions {
  int id = 0;
  std::string checkpoint_dir;  // empty: no checkpoints
  std::string resume_dir;      // start from this server's checkpoint there (dl-ckpt prepare-resume)
  int keep_checkpoints = 3;
};

class ParameterServer {
 public:
  ParameterServer(const Plan& plan, ServerOptions options);
  // Stops the NNG callbacks before the state they use goes away.
  ~ParameterServer() { rpc_.Close(); }

  // Initialises this server's slices and listens on its endpoint.
  Status Start();
  // Serves until every worker is done or a shutdown request comes; gives up
  // when no request arrives for the plan's timeout. Writes a final checkpoint
  // unless it stops mid-step under BSP.
  Status Run();
  ServerStats stats();
  // The counters as dl-server prints them and kStats answers them.
  nlohmann::json Report();

 private:
  enum class Consistency { kBsp, kAsync, kSsp, kEasgd };
  struct Slice {
    uint32_t key;
    std::vector<float> value, grad_sum;
    UpdaterState state;  // the updater's buffers, named by StateNames(); none under easgd
  };
  // One layer's slices on this server: the unit of an update, of BSP's
  // summing and applying, and of versions.
  struct Layer {
    std::string name;
    std::vector<uint32_t> keys;               // increasing
    std::vector<std::vector<uint32_t>> held;  // per worker: its keys of this layer here, increasing
    int holders = 0;                          // workers holding some of it here
    uint64_t version = 0;                     // updates (easgd: exchanges) applied to it
    std::vector<uint64_t> updates_from;       // per worker: the step after its last update taken in
    // bsp, the layer's current step: whose update arrived. Gradients are
    // summed in worker order whatever order they arrive in, so a run's result
    // does not depend on timing; early arrivals wait in `waiting`.
    std::vector<bool> contributed;
    int contributors = 0;
    int next_to_sum = 0;
    std::vector<std::vector<std::pair<uint32_t, std::vector<float>>>> waiting;  // per worker
  };
  struct Parked {
    int slot;
    uint64_t version;         // bsp: the version it waits for; ssp: the clock it reads at
    bool done;                // a worker's done: answered when every worker is done
    int sender;               // answered with this worker's slices; -1: every slice
    std::vector<int> layers;  // only these are answered (none: every layer), bsp: once they reach `version`
  };

  void Handle(int slot, const MessageView& request);
  void HandleGet(int slot, const MessageView& request);
  void HandleUpdate(int slot, const MessageView& request);
  void HandlePut(int slot, const MessageView& request);
  void HandleDone(int slot, const MessageView& request);
  void HandleJoin(int slot, const MessageView& request);
  void HandleSync(int slot, const MessageView& request);
  void HandleExchange(int slot, const MessageView& request);
  // The job's cluster.consistency; ParseJob has checked the name.
  static Consistency ConsistencyNamed(const std::string& name);
  // ssp: answers a read at `clock` of `layers` now if the slack allows, else parks it.
  void ReadAtClock(int slot, int worker, uint64_t clock, const std::vector<int>& layers);
  // Whether a parked request can be answered now; Answer answers one that can
  // (ssp: counting how stale the answer is).
  bool Ready(const Parked& parked) const;
  void Answer(const Parked& parked);
  // The state each slice keeps: the updater's, or none for easgd's centre.
  const std::vector<std::string>& StateNames() const;
  // Why an update's or put's slices do not fit this server's table; empty if they do.
  std::string MismatchedSlice(const MessageView& request) const;
  Status Resume();
  // Why an update (exchange) does not fit this server's table
  // (MismatchedSlice) or does not carry, for each layer it touches, exactly
  // the slices its sender holds of it here; empty if it fits, with `layers`
  // the layers it touches in key order.
  std::string MisheldSlices(const MessageView& request, std::vector<int>* layers) const;
  // The entries of `request` that belong to layer `index`.
  std::vector<const EntryView*> EntriesOf(const MessageView& request, int index) const;
  // Takes in one worker's gradients of a layer's current step (bsp) or applies them (the others).
  void TakeUpdate(Layer& layer, uint32_t sender, uint64_t step, const std::vector<const EntryView*>& entries);
  // bsp: sums the gradients waiting in worker order as far as they go.
  void SumInOrder(Layer& layer);
  // bsp: applies every layer whose step is complete, from the table's version.
  void ApplyCompleteLayers();
  void AddGradients(const std::vector<const EntryView*>& entries);
  void ApplySlice(Slice& slice, float scale, uint64_t version);
  // The table's version follows its slowest layer (bsp: and the workers
  // holding nothing here): counts each new one, checkpoints when it is time.
  void CatchUpVersion();
  void AdvanceVersion();
  // The lowest version among `layers` (none: the table's).
  uint64_t VersionOf(const std::vector<int>& layers) const;
  // Which layer is past the table's version, and where; empty if none is.
  std::string LayerAhead() const;
  // The step worker `worker` trains next as far as this server knows: the
  // step after the last one whose every layer here was taken in (its clock).
  uint64_t NextStepOf(int worker) const;
  // The same for `layers` only (none: the worker's empty updates).
  uint64_t NextStepOf(int worker, const std::vector<int>& layers) const;
  // ssp: the least clock of the workers this server serves that are not done.
  uint64_t SlowestClock() const;
  // Answers with worker `worker`'s slices of `layers` (none: of every layer;
  // worker -1: every slice); `step` defaults to their version.
  void ReplyParams(int slot, int worker, const std::vector<int>& layers, uint64_t step = ~0ull);
  void ReplyOk(int slot);
  void ReplyError(int slot, const std::string& why);
  void ServeParked();
  Status Checkpoint();
  nlohmann::json StatsJson();

  const Plan& plan_;
  ServerOptions options_;
  UpdaterConfig updater_;
  uint64_t plan_hash_;
  int workers_;  // of the plan
  int served_;   // the workers of this server's group (all of them with one server group)
  int group_;    // this server's group
  Consistency consistency_;
  bool bsp_;  // consistency_ == kBsp, which most paths ask
  std::unique_ptr<ServerSync> sync_;  // several server groups
  ValueEncoding wire_ = ValueEncoding::kF32;  // cluster.wire: how workers' slices travel
  RpcServer rpc_;

  std::mutex mu_;
  std::condition_variable changed_;
  std::map<uint32_t, Slice> slices_;
  std::vector<std::vector<uint32_t>> held_;  // per worker: the keys of this server it holds, increasing
  std::vector<int> holders_;                 // per key of the plan: how many workers hold it
  std::vector<Layer> layers_;          // in the net's order
  std::map<uint32_t, int> layer_of_;   // key -> index in layers_
  std::vector<std::vector<int>> held_layers_;  // per worker: the layers it holds some of here, increasing
  std::vector<bool> serves_;           // per worker: whether it is in this server's group
  std::vector<uint64_t> empty_steps_;  // per worker holding nothing here: the step after its last empty update
  nlohmann::json metric_;              // the last evaluation a worker reported
  std::vector<bool> done_;
  int done_count_ = 0;
  std::vector<Parked> parked_;
  bool finished_ = false;
  bool shutdown_ = false;
  uint64_t requests_ = 0;
  Status failure_;
  ServerStats stats_;
};

}  // namespace shoal
