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
// A worker that rejoins after a crash asks where to go on (join) and repeats
// the step it was in: an update of a step already counted or applied is
// dropped and answered as the first one was, so nothing is applied twice.
// An update-get is an update answered like a get of the next version: one
// round trip per step. Gradients may arrive as fp16 (cluster.wire) and are
// summed and applied in fp32; a worker's slices go back in the wire's encoding.
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
  // when no request arrives for the plan's timeout. Writes a final checkpoint.
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
  struct Parked {
    int slot;
    uint64_t version;  // bsp: the version it waits for; ssp: the clock it reads at
    bool done;         // a worker's done: answered when every worker is done
    int sender;        // answered with this worker's slices
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
  // ssp: answers a read at `clock` now if the slack allows, else parks it.
  void ReadAtClock(int slot, int worker, uint64_t clock);
  // Whether a parked request can be answered now; Answer answers one that can
  // (ssp: counting how stale the answer is).
  bool Ready(const Parked& parked) const;
  void Answer(const Parked& parked);
  // The state each slice keeps: the updater's, or none for easgd's centre.
  const std::vector<std::string>& StateNames() const;
  // Why an update's or put's slices do not fit this server's table; empty if they do.
  std::string MismatchedSlice(const MessageView& request) const;
  Status Resume();
  // Why an update does not carry exactly the slices its sender holds here; empty if it does.
  std::string MisheldSlices(const MessageView& request) const;
  void AddGradients(const std::vector<EntryView>& entries);
  void ApplySlice(Slice& slice, float scale);
  // The table has a new version: count it, checkpoint when it is time.
  void AdvanceVersion();
  // Answers with worker `worker`'s slices (-1: every slice); `step`
  // defaults to the table's version.
  void ReplyParams(int slot, int worker, uint64_t step = ~0ull);
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
  std::vector<bool> contributed_;  // bsp: whose update of the current step arrived
  int contributors_ = 0;
  // bsp: gradients are summed in worker order, whatever order they arrive
  // in, so a run's result does not depend on timing. Early arrivals wait here.
  int next_to_sum_ = 0;
  std::vector<std::vector<std::pair<uint32_t, std::vector<float>>>> waiting_;  // per worker
  // Per worker: the step it goes on at when it rejoins, checkpointed. async
  // and ssp: its updates taken in (ssp: its clock); easgd: the step after its
  // last exchange; bsp: its updates taken in (it rejoins at the version).
  std::vector<uint64_t> updates_from_;
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
