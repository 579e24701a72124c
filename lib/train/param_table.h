// Where a worker's parameters come from and its gradients go: the servers of
// the plan (RemoteTable), an updater in the same process (LocalTable, for
// single-process runs and benchmarks), or both: a local replica that now and
// then exchanges with the servers' centre (ElasticTable, train/elastic_table.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "comm/rpc_client.h"
#include "core/mutex.h"
#include "core/process.h"
#include "core/time_sum.h"
#include "layers/layer.h"
#include "net/partitioned_net.h"
#include "plan/plan.h"
#include "train/local_updater.h"

namespace shoal {

// A thread that tells each of a worker's servers, every quarter of
// cluster.timeout_ms, what the worker is busy with (a kAlive request): a
// server then answers the other workers' requests waiting on it `busy`,
// and they ask again, where they would have timed out. So the timeout
// bounds a worker's silence, not its work.
// A worker that waits on a server must stop telling it is busy: the others
// waiting on it, and it on them, would never time out. Its waits hold a
// Pause, and nothing is sent while one lives; a server counts a worker busy
// for a timeout after its last word, so such a wait gives up within two
// timeouts, not one. Waits on a group's peers (model parallelism, a synced
// batch norm) are not paused: their own timeout bounds them.
class Keepalive {
 public:
  // `clients`: one per server, of its own (RpcClient::Share). Busy with
  // `what` from now until destroyed; with `what` empty, only from Begin to End.
  Keepalive(std::vector<std::unique_ptr<RpcClient>> clients, MsgHeader header, std::string what,
            int timeout_ms);
  // Stops the thread; waits for a request in flight (at most the timeout).
  ~Keepalive() EXCLUDES(mu_);
  Keepalive(const Keepalive&) = delete;
  Keepalive& operator=(const Keepalive&) = delete;

  // Busy with `what` from now. The thread looks every quarter of the
  // timeout, and tells once the spell has lasted that long: its first word
  // goes one to two quarters after Begin, and a shorter spell sends none.
  void Begin(std::string what) EXCLUDES(mu_);
  void End() EXCLUDES(mu_);

  // While it lives, `keepalive` (may be null) sends nothing.
  class Pause {
   public:
    explicit Pause(Keepalive* keepalive);
    ~Pause();
    Pause(const Pause&) = delete;
    Pause& operator=(const Pause&) = delete;

   private:
    Keepalive* const keepalive_;
  };

 private:
  void Run() EXCLUDES(mu_);
  // One kAlive to every server at once, then every answer.
  void Tell(const std::string& what);

  std::vector<std::unique_ptr<RpcClient>> clients_;
  MsgHeader header_;
  std::chrono::milliseconds every_;
  Mutex mu_;
  CondVar stop_cv_{&mu_};
  bool stop_ GUARDED_BY(mu_) = false;
  bool busy_ GUARDED_BY(mu_) = false;
  std::string what_ GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point since_ GUARDED_BY(mu_);  // busy since
  int pauses_ GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

// Where a worker's parameters come from and its gradients go.
class ParamTable {
 public:
  virtual ~ParamTable() = default;
  // Fills the params and says which step this worker trains next: 0 for a
  // fresh run, the servers' step for a worker that rejoins or resumes.
  virtual Status Join(uint64_t* step) = 0;
  // Hands over the gradients of step `step` (those not handed over already)
  // and makes the params ready for the next step: filled with values of at
  // least version `step` + 1 (a local updater applies them in place), or,
  // for a RemoteTable overlapping, asked for, each collected before its
  // layer's forward pass (its LayerHooks). `loss` is the step's training
  // loss (easgd's adaptive period adds it up).
  virtual Status Push(uint64_t step, double loss) = 0;
  // Says this worker is done; fills the params with the final values.
  virtual Status Finish() = 0;
  // Hands an evaluation (JSON object) to the servers for their checkpoints.
  virtual Status Report(const std::string& metric) = 0;
  // Fills a whole net's params with every parameter's values of version
  // `version` or later (a worker that holds only some evaluates the whole net).
  virtual Status FetchAll(const std::vector<Param*>& whole, uint64_t version) = 0;
  // Keeps this worker's servers told that it is busy with `what` while the
  // result lives (Keepalive); null where no server waits on it. A worker
  // whose servers cannot be reached learns so from its next request.
  virtual std::unique_ptr<Keepalive> KeepBusy(const std::string& /*what*/) { return nullptr; }
  // Step `step`'s passes compute from Computing to Computed. A step that
  // takes more than a quarter of the timeout is told to the servers as
  // Keepalive tells them; its waits on servers are not.
  virtual void Computing(uint64_t /*step*/) {}
  virtual void Computed() {}
};

// ParamTable::Computing for its scope: Computed at its end, an early return's too.
class ComputingSpell {
 public:
  ComputingSpell(ParamTable* table, uint64_t step) : table_(table) { table_->Computing(step); }
  ~ComputingSpell() { table_->Computed(); }
  ComputingSpell(const ComputingSpell&) = delete;
  ComputingSpell& operator=(const ComputingSpell&) = delete;

 private:
  ParamTable* const table_;
};

// A table whose updater runs in this process: a standalone run's.
class LocalTable : public ParamTable {
 public:
  LocalTable(const Plan& plan, std::vector<Param*> params);
  // Whether every initial value was had (a checkpoint of init_from may not be).
  const Status& init_status() const { return init_status_; }
  Status Join(uint64_t* step) override {
    *step = 0;
    return Status::Ok();
  }
  // Always Ok.
  Status Push(uint64_t step, double loss) override;
  Status Finish() override { return Status::Ok(); }
  Status Report(const std::string&) override { return Status::Ok(); }
  // The values are always the latest: the one process makes every version.
  // Always Ok; `whole` must list the params in this table's order.
  Status FetchAll(const std::vector<Param*>& whole, uint64_t version) override;

 private:
  std::vector<Param*> params_;
  LocalUpdater updater_;
  Status init_status_;
};

// With train.overlap (SINGA §5.3), the worker passes the table to its net's
// passes as their LayerHooks: once backprop has finished a lane's layers
// (lib/plan/lanes.h: layers gathered top down until train.
// overlap_bucket_floats; one layer each with 0) their gradients leave, one
// update-get per server, while backprop goes on with the layers below; just
// before the lane's lowest layer's next forward pass its new values are
// collected, the bottom lane's first. Each lane has a request context of
// its own (RpcClient::Share) on the one connection to its server. Without
// overlap, Push sends every gradient and waits for every value, one request
// per server.
class RemoteTable : public ParamTable, public LayerHooks {
 public:
  // `params`: what worker `worker` holds (lib/plan/partition.h), named as the
  // plan's parameters. Every wait gives up after `timeout_ms`, naming the
  // server. Every request carries `incarnation`: this life of the worker.
  RemoteTable(const Plan& plan, int worker, std::vector<Param*> params, int timeout_ms,
              uint64_t incarnation = IncarnationOf(""));
  // Returns RpcClient::Dial's and Share's errors; the clients dialled so far are kept.
  Status Connect();
  // The requests below return RpcClient's errors, InvalidArgument for a reply
  // of another plan, and Corruption for slices the plan does not give that
  // server; the params may be part-updated then. Those sent to every server
  // at once (not FetchAll's, nor a lane's) also return Timeout where a server
  // answers 'wait' at one version for the timeout.
  // Join: a join refused past RpcClient::kLostAfter is InvalidArgument, and
  // *step may be set then.
  Status Join(uint64_t* step) override;
  Status Push(uint64_t step, double loss) override;
  // easgd: sends the params' values as they are after step `step` and
  // subtracts the elastic difference each server answers with.
  Status Exchange(uint64_t step);
  Status Finish() override;
  Status Report(const std::string& metric) override;
  // Asks every server for a checkpoint when its table reaches `version`,
  // filling `versions` with each server's version as it answered. Under BSP
  // a server past `version` refuses (InvalidArgument); elsewhere it answers
  // with its version and writes nothing (so an ask at 0 only asks). On an
  // error *versions holds the answers had before it.
  Status CheckpointAt(uint64_t version, std::vector<uint64_t>* versions);
  Status FetchAll(const std::vector<Param*>& whole, uint64_t version) override;
  std::unique_ptr<Keepalive> KeepBusy(const std::string& what) override;
  void Computing(uint64_t step) override;
  void Computed() override;
  Status BeforeForward(const Layer& layer) override;
  Status AfterBackward(const Layer& layer, uint64_t step) override;
  // Collects every reply still in flight: the params then hold the values
  // the last Push asked for, and the byte counts include them. Returns the
  // first lane's error; the lanes after it are left in flight.
  Status Settle();
  // Whether gradients leave layer by layer (train.overlap; never under
  // easgd, whose exchanges carry values every few steps, not gradients).
  bool overlaps() const { return overlap_; }
  // Parameter bytes of training (gradients or values out, values or
  // differences in): as encoded on the wire (half of fp32's with cluster.wire: fp16).
  uint64_t bytes_sent() const { return bytes_sent_; }
  uint64_t bytes_received() const { return bytes_received_; }
  // Updates (easgd: exchanges) sent, each to every server: what the servers'
  // updates_from should count for this worker.
  uint64_t updates_sent() const { return updates_sent_; }
  // Seconds spent encoding requests (and handing them to NNG), waiting for
  // the servers' replies, and decoding them into the params.
  struct Busy {
    double encode = 0, wait = 0, decode = 0;
    double total() const { return encode + wait + decode; }
  };
  Busy busy() const { return {encoding_.seconds(), waiting_.seconds(), decoding_.seconds()}; }

 private:
  struct Piece {
    uint32_t key;
    Param* param;
    size_t offset, count;
  };
  enum class Send { kNothing, kGrads, kValues };       // what a request carries of the params
  enum class Take { kNothing, kValues, kDifference };  // what a reply's entries do to them
  // A request to every server: what it carries of `pieces` (per server), and
  // what its replies' entries do to them.
  struct Request {
    MsgType type;
    uint64_t step;
    const std::vector<std::vector<Piece>>& pieces;
    Send send = Send::kNothing;
    Take take = Take::kNothing;
    std::string text;
  };
  // Sends `request` to every server at once, then takes every reply, matched
  // to its pieces. `steps` (if given) receives each reply's step.
  Status RoundTrip(const Request& request, std::vector<uint64_t>* steps = nullptr);
  Status SendTo(size_t server, const Request& request);
  // Server `server`'s reply to `request`, asked again while it answers
  // `wait`: a join until `join_deadline` (the server may not have heard yet
  // that this worker's previous life ended), anything else while the
  // server's table moves (a done, while the other workers train).
  Status ReceiveAnswer(size_t server, const Request& request,
                       std::chrono::steady_clock::time_point join_deadline, Reply* reply);
  // A client's Send and Receive, timed (busy()).
  Status TimedSend(RpcClient* client, const MsgHeader& header, const std::vector<EntryRef>& entries,
                   const std::string& text = "");
  Status TimedReceive(RpcClient* client, Reply* reply);
  // TimedReceive, asking again (`again`) while the server answers that
  // another worker is busy (kBusy): that worker's keepalives bound the wait.
  Status ReceiveWhileBusy(RpcClient* client, Reply* reply, const std::function<Status()>& again);
  // Logs a server's kBusy answer, once for each thing it says.
  void NoteBusy(const RpcClient& client, const std::string& why);
  // Copies a reply's slices into `pieces` (or subtracts them), which it must
  // match one for one.
  Status Absorb(int server, const MessageView& reply, const std::vector<Piece>& pieces, Take take);
  // Some layers' slices on one server (none: a server where this worker
  // holds nothing, which hears of each step all the same), with a request of its own.
  struct Lane {
    int server;  // index into servers_
    std::vector<Piece> pieces;
    std::unique_ptr<RpcClient> client;
    bool in_flight = false;
    uint64_t step = 0;  // of the request in flight
  };
  // Opens the lanes (train.overlap) once the clients are connected.
  Status OpenLanes();
  Status SendLane(Lane& lane, uint64_t step);
  void CrashBetweenSends();
  Status CollectLane(Lane& lane);

  const Plan& plan_;
  int worker_;
  int timeout_ms_;
  uint64_t incarnation_;
  uint64_t plan_hash_;
  ValueEncoding wire_ = ValueEncoding::kF32;  // cluster.wire: how gradients go and values come back
  std::vector<float> differences_;            // easgd: a reply's differences, decoded
  std::vector<std::unique_ptr<RpcClient>> clients_;
  std::vector<int> servers_;                // the ones this worker talks to (its server group)
  std::vector<std::vector<Piece>> pieces_;  // per server of servers_: what a join fills
  // The same less the frozen (lr_mult 0): what every step exchanges. A
  // frozen parameter's values come once, as the worker joins, and its
  // gradients, never applied, are not sent.
  std::vector<std::vector<Piece>> exchanged_;
  bool overlap_;
  std::vector<Lane> lanes_;                                    // with overlap
  std::map<std::string, std::vector<size_t>> lanes_of_layer_;  // lowest layer's name -> its lanes
  uint64_t bytes_sent_ = 0, bytes_received_ = 0;
  uint64_t updates_sent_ = 0;
  TimeSum encoding_, waiting_, decoding_;
  std::string busy_noted_;  // the last kBusy answer logged
  // Tells the servers of a long step (Computing); made at the first, null
  // where a client could not be shared (the next request says why).
  std::unique_ptr<Keepalive> computing_;
  bool computing_made_ = false;
};

}  // namespace shoal
