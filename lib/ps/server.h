// dl-server's core: one shard of the parameter table behind an RpcServer.
// It validates each request, keeps the bookkeeping every consistency model
// shares, and hands the rest to its parts:
//   lib/ps/server_config.h  what it knows of the plan, worked out once
//   lib/ps/table.h          the slices, layers, versions and clocks
//   lib/ps/consistency.h    when gradients are applied and reads answered
//                           (bsp, async, ssp, easgd: one file pair each)
//   lib/ps/parked.h         the reads and dones answered later
//   lib/ps/checkpointer.h   snapshots written on a thread of their own
//   lib/ps/server_sync.h    distributed Hogwild's syncs between server groups
//
// In a hybrid plan a worker holds only some slices (lib/plan/partition.h):
// it sends their gradients and receives their values. Gradients are summed
// per slice and divided by the number of workers: a partitioned layer's
// gradient is computed over its whole group's records, so this is the
// average over every record either way.
// An update carries whole layers: for each layer it touches, every slice of
// it the sender holds here. A worker that overlaps communication with
// computation (train.overlap) sends one update-get per lane of layers as
// backprop produces them, the top lane first; otherwise one for all its
// layers. An update-get is an update answered like a read of the next
// version of the layers it carries: one round trip per step and lane.
// Gradients may arrive as fp16 (cluster.wire) and are summed and applied in
// fp32; a worker's slices go back in the wire's encoding.
// A worker that rejoins after a crash asks where to go on (join) and repeats
// the step it was in: an update of a layer's step already taken in is
// dropped and answered as the first one was, so nothing is applied twice.
// Each life of a worker process has an incarnation (every request carries
// it): a join of a new one while the old one is still connected is told to
// wait (the old connection's close may not have been heard yet; the joiner
// gives up after a few seconds: two processes claim one worker id), and once
// it has joined, requests of the old one are refused. A server whose workers have all been gone for
// cluster.lease_ms stops: their supervisor has died, and nobody is coming.
// A worker's `done` waits until every worker is done and is answered with
// the final parameters; then the server checkpoints and exits. Meanwhile it
// is answered `wait` every half cluster.timeout_ms and asked again, so a
// worker that ends early waits as long as the others train (the server's
// watchdog, which a done asked again does not feed, still bounds it).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "comm/rpc_server.h"
#include "core/log.h"
#include "core/time_sum.h"
#include "plan/plan.h"
#include "ps/checkpointer.h"
#include "ps/consistency.h"
#include "ps/parked.h"
#include "ps/server_config.h"
#include "ps/server_stats.h"
#include "ps/server_sync.h"
#include "ps/table.h"

namespace shoal {

struct ServerOptions {
  int id = 0;
  std::string checkpoint_dir;  // empty: no checkpoints
  std::string resume_dir;      // start from this server's checkpoint there (dl-ckpt prepare-resume)
  int keep_checkpoints = 3;
  // This life of the server (lib/core/process.h); a shutdown request must
  // carry it. 0: anyone may shut it down (tests, a server run by hand).
  uint64_t incarnation = 0;
  // Run inside its worker's process (ServerInWorker): also listens on the
  // InProcessEndpoint that worker dials.
  bool in_worker = false;
};

class ParameterServer {
 public:
  // Works out what it needs of `plan` (which it does not keep).
  ParameterServer(const Plan& plan, ServerOptions options);
  // Stops the NNG callbacks before the state they use goes away.
  ~ParameterServer() { rpc_.Close(); }

  // Initialises this server's slices and listens on its endpoint.
  Status Start();
  // Serves until every worker is done or a shutdown request comes; gives up
  // when no request arrives for the plan's timeout. Writes a final checkpoint
  // unless it stops mid-step under BSP.
  Status Run();
  // Stops Run as a shutdown request would (from another thread: the worker
  // hosting this server failed, and `why` says how). The requests it still
  // holds hear `why`: a peer's failure (timeout, unavailable) or none as the
  // server going away (`stopping`: a supervisor restarts them), any other
  // as an error no restart mends (exit 1, as their host's).
  void Stop(const Status& why = Status::Ok());
  ServerStats stats();
  // The counters as dl-server prints them and kStats answers them.
  nlohmann::json Report();

 private:
  // One life of a worker as this server knows it.
  struct WorkerLife {
    uint64_t incarnation = 0;  // 0: it has not joined
    uint32_t pipe = 0;         // the connection its last request came on
    bool connected = false;    // that connection is open
  };

  void Handle(int slot, const MessageView& request, uint32_t pipe);
  void HandleWorkerRequest(int slot, const MessageView& request, uint32_t pipe);
  // Ok if a worker's request comes from its current incarnation;
  // InvalidArgument naming the incarnation it comes from otherwise.
  Status CheckIncarnation(const MessageView& request, uint32_t pipe);
  void PipeClosed(uint32_t pipe);
  // Whether some worker this server serves is connected now.
  bool AnyWorkerConnected() const;
  // A finished server's last wait before its socket closes: a worker hangs
  // up once it has read its done's reply, which carries its whole share of
  // the parameters, seconds on a slow or shared link (a data-parallel
  // worker's 119 MB of configs/models/fc-heavy.yaml, two workers to a
  // 1 Gbit/s NIC: bench/hybrid_netns.sh). Up to cluster.timeout_ms.
  void AwaitWorkersHangUp();
  // Run's watch, every fraction of a second: parked reads past their
  // deadline, no request for the timeout, no worker for the lease.
  void Watch(std::chrono::steady_clock::time_point now);
  void HandleGet(int slot, const MessageView& request);
  void HandleUpdate(int slot, const MessageView& request);
  void HandleExchange(int slot, const MessageView& request);
  void HandlePut(int slot, const MessageView& request);
  void HandleSync(int slot, const MessageView& request);
  void HandleMetric(int slot, const MessageView& request);
  void HandleJoin(int slot, const MessageView& request, uint32_t pipe);
  void HandleDone(int slot, const MessageView& request);
  // Answers `read` now if the model allows, else parks it.
  void ReadOrPark(int slot, const Read& read, uint32_t sender);
  static constexpr size_t kToolRequestsWaiting = 4;
  void Answer(int slot, const Read& read);
  void ServeParked();
  // Advances the table to the version the model says it has reached, with
  // what each new version brings (a sync due, a checkpoint due).
  void CatchUp();
  void Checkpoint();
  // Answers with worker `worker`'s slices of `layers` (none: of every layer;
  // worker -1: every slice); `step` defaults to their version.
  void ReplyParams(int slot, int worker, const std::vector<int>& layers, uint64_t step = ~0ull);
  void ReplyOk(int slot);
  void ReplyError(int slot, const std::string& why);
  // Not yet, and why: a parked done (not every worker is done), or a join
  // while the worker's previous life still counts as connected.
  void ReplyWait(int slot, const std::string& why);
  void ReplyTimedOut(int slot, const std::string& why);  // a parked read past its deadline
  bool RepeatedDone(const MsgHeader& header) const;
  Status Resume();
  // What the counters say now, and the same as the JSON a stats request gets (mu_ held).
  ServerStats StatsNow() const;
  nlohmann::json StatsJson();

  Status config_status_;
  ServerConfig config_;
  ServerOptions options_;
  RpcServer rpc_;

  std::mutex mu_;
  std::condition_variable changed_;
  ServerStats stats_;
  TimeSum handling_;  // in Handle
  std::unique_ptr<Consistency> model_;
  std::unique_ptr<ServerTable> table_;
  ParkedRequests parked_;
  Checkpointer checkpointer_;
  std::unique_ptr<ServerSync> sync_;  // several server groups
  RateLimitedLog refusals_;
  nlohmann::json metric_;          // the last evaluation a worker reported
  std::vector<WorkerLife> lives_;  // per worker of the plan
  bool any_joined_ = false;
  std::chrono::steady_clock::time_point last_request_, last_connected_;
  bool finished_ = false;
  bool shutdown_ = false;
  Status stop_reason_;  // Stop's `why`
  uint64_t requests_ = 0;
  Status failure_;
};

}  // namespace shoal
