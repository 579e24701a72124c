// dl-server's core: one shard of the parameter table behind an RpcServer.
// It validates each request, keeps the bookkeeping every consistency model
// shares, and hands the rest to its parts: server_config.h (the plan, worked
// out once), table.h (slices, layers, versions), consistency.h (when
// gradients apply and reads are answered), parked.h (requests answered
// later), checkpointer.h and server_sync.h. The protocol it serves (requests,
// joins, incarnations, leases, done) is in docs/design.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "comm/rpc_server.h"
#include "core/log.h"
#include "core/mutex.h"
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
  // Where the checkpoint goes that checkpoint_dir could not take, when the
  // server gives up on it (train.checkpoint_failures); empty: the system's
  // temporary directory's shoal-rescue/.
  std::string rescue_dir;
  // This life of the server (lib/core/process.h); a shutdown request must
  // carry it. 0: anyone may shut it down (tests, a server run by hand).
  uint64_t incarnation = 0;
  // Run inside its worker's process (ServerInWorker): also listens on the
  // InProcessEndpoint that worker dials.
  bool in_worker = false;
};

// One shard of the parameter table, serving its workers' requests until they are done.
class ParameterServer {
 public:
  // Works out what it needs of `plan` (which it does not keep); a plan this
  // server cannot serve makes Start fail.
  ParameterServer(const Plan& plan, ServerOptions options);
  // Stops the NNG callbacks before the state they use goes away.
  ~ParameterServer() { rpc_.Close(); }

  // Initialises this server's slices (from --resume's checkpoint where
  // given) and listens on its endpoint. InvalidArgument for a plan or
  // checkpoint that does not fit, IOError for one that cannot be read or an
  // endpoint it cannot listen on.
  Status Start() EXCLUDES(mu_);
  // Serves until every worker is done or a shutdown request comes, then
  // writes a final checkpoint (unless it stops mid-step under BSP). Returns
  // Timeout when no request came for the plan's timeout, Unavailable when no
  // worker was connected for its lease, the Status Stop was given, or
  // IOError when a checkpoint could not be written.
  Status Run() EXCLUDES(mu_);
  // Stops Run as a shutdown request would (from another thread: the worker
  // hosting this server failed, and `why` says how). The requests it still
  // holds hear `why`: a peer's failure (timeout, unavailable) or none as the
  // server going away (`stopping`: a supervisor restarts them), any other
  // as an error no restart mends (exit 1, as their host's).
  void Stop(const Status& why = Status::Ok()) EXCLUDES(mu_);
  // The counters now; never fails.
  ServerStats stats() EXCLUDES(mu_);
  // The counters as dl-server prints them and kStats answers them.
  nlohmann::json Report() EXCLUDES(mu_);

 private:
  // One life of a worker as this server knows it.
  struct WorkerLife {
    uint64_t incarnation = 0;  // 0: it has not joined
    uint32_t pipe = 0;         // the connection its last request came on
    bool connected = false;    // that connection is open
    // Until when it counts as busy (its last kAlive plus the timeout, or until
    // that connection closes), and with what.
    std::chrono::steady_clock::time_point busy_until{};
    std::string busy_with;
  };

  void Handle(int slot, const MessageView& request, uint32_t pipe) EXCLUDES(mu_);
  void HandleWorkerRequest(int slot, const MessageView& request, uint32_t pipe) REQUIRES(mu_);
  // Ok if a worker's request comes from its current incarnation;
  // InvalidArgument naming the incarnation it comes from otherwise.
  Status CheckIncarnation(const MessageView& request, uint32_t pipe) REQUIRES(mu_);
  void PipeClosed(uint32_t pipe) EXCLUDES(mu_);
  // Whether some worker this server serves is connected now.
  bool AnyWorkerConnected() const REQUIRES(mu_);
  // A finished server's last wait before its socket closes, up to
  // cluster.timeout_ms. A worker hangs up once it has read its done's reply,
  // which carries its whole share of the parameters: seconds on a slow or
  // shared link.
  void AwaitWorkersHangUp() EXCLUDES(mu_);
  // Run's watch, every fraction of a second: parked reads past their
  // deadline, no request for the timeout, no worker for the lease.
  void Watch(std::chrono::steady_clock::time_point now) REQUIRES(mu_);
  // Fails the server (failure_) once the checkpointer has given up.
  void NoteCheckpointFailures() REQUIRES(mu_);
  void HandleGet(int slot, const MessageView& request) REQUIRES(mu_);
  void HandleUpdate(int slot, const MessageView& request) REQUIRES(mu_);
  void HandleExchange(int slot, const MessageView& request) REQUIRES(mu_);
  void HandlePut(int slot, const MessageView& request) REQUIRES(mu_);
  void HandleSync(int slot, const MessageView& request) REQUIRES(mu_);
  void HandleMetric(int slot, const MessageView& request) REQUIRES(mu_);
  void HandleJoin(int slot, const MessageView& request, uint32_t pipe) REQUIRES(mu_);
  void HandleDone(int slot, const MessageView& request) REQUIRES(mu_);
  // A worker busy with something long (an evaluation) that waits on no server.
  void HandleAlive(int slot, const MessageView& request) REQUIRES(mu_);
  // A worker's checkpoint set at a version to come; under BSP a version passed is refused.
  void HandleCheckpoint(int slot, const MessageView& request) REQUIRES(mu_);
  // "worker 0 is busy: <what>" for a worker other than `reader` that said
  // within the timeout that it is busy; empty when none did.
  std::string BusyPeer(uint32_t reader, std::chrono::steady_clock::time_point now) const REQUIRES(mu_);
  // Answers `read` now if the model allows, else parks it.
  void ReadOrPark(int slot, const Read& read, uint32_t sender) REQUIRES(mu_);
  static constexpr size_t kToolRequestsWaiting = 4;
  void Answer(int slot, const Read& read) REQUIRES(mu_);
  void ServeParked() REQUIRES(mu_);
  // Advances the table to the version the model says it has reached, with
  // what each new version brings (a sync due, a checkpoint due).
  void CatchUp() REQUIRES(mu_);
  void Checkpoint() REQUIRES(mu_);
  // Answers with worker `worker`'s slices of `layers` (none: of every layer;
  // worker -1: every slice); `step` defaults to their version.
  void ReplyParams(int slot, int worker, const std::vector<int>& layers, uint64_t step = ~0ull) REQUIRES(mu_);
  void ReplyOk(int slot) REQUIRES(mu_);
  void ReplyError(int slot, const std::string& why) REQUIRES(mu_);
  // A request to a server that stops for `why` (ok: shut down): a server
  // going away (shut down, or given up on its peers) says stopping, which a
  // worker meets with a restart; any other failure is an error.
  void ReplyStopping(int slot, const Status& why) REQUIRES(mu_);
  // Not yet, and why: a parked done (not every worker is done), or a join
  // while the worker's previous life still counts as connected.
  void ReplyWait(int slot, const std::string& why) REQUIRES(mu_);
  void ReplyTimedOut(int slot, const std::string& why) REQUIRES(mu_);  // a parked read past its deadline
  // A parked request past its deadline while a peer it may wait on is busy: ask again.
  void ReplyBusy(int slot, const std::string& why) REQUIRES(mu_);
  bool RepeatedDone(const MsgHeader& header) const REQUIRES(mu_);
  // The table, its model and its bookkeeping, resumed from a checkpoint where asked.
  Status Prepare() REQUIRES(mu_);
  Status Resume() REQUIRES(mu_);
  // What the counters say now, and the same as the JSON a stats request gets.
  ServerStats StatsNow() const REQUIRES(mu_);
  nlohmann::json StatsJson() REQUIRES(mu_);

  Status config_status_;
  ServerConfig config_;
  ServerOptions options_;
  RpcServer rpc_;

  Mutex mu_;
  CondVar changed_{&mu_};
  ServerStats stats_ GUARDED_BY(mu_);
  TimeSum handling_;  // in Handle
  std::unique_ptr<Consistency> model_ GUARDED_BY(mu_);
  std::unique_ptr<ServerTable> table_ GUARDED_BY(mu_);
  ParkedRequests parked_ GUARDED_BY(mu_);
  Checkpointer checkpointer_;
  std::unique_ptr<ServerSync> sync_;  // several server groups
  RateLimitedLog refusals_;
  nlohmann::json metric_ GUARDED_BY(mu_);          // the last evaluation a worker reported
  std::vector<WorkerLife> lives_ GUARDED_BY(mu_);  // per worker of the plan
  bool any_joined_ GUARDED_BY(mu_) = false;
  // The versions to come a worker asked checkpoints of, each written as the table passes it.
  std::set<uint64_t> checkpoints_asked_ GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point last_request_ GUARDED_BY(mu_), last_connected_ GUARDED_BY(mu_);
  bool finished_ GUARDED_BY(mu_) = false;
  bool shutdown_ GUARDED_BY(mu_) = false;
  Status stop_reason_ GUARDED_BY(mu_);  // Stop's `why`
  uint64_t requests_ GUARDED_BY(mu_) = 0;
  Status failure_ GUARDED_BY(mu_);
};

}  // namespace shoal
