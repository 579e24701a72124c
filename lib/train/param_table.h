// Where a worker's parameters come from and its gradients go: the servers of
// the plan (RemoteTable), an updater in the same process (LocalTable, for
// single-process runs and benchmarks), or both: a local replica that now and
// then exchanges with the servers' centre (ElasticTable, train/elastic_table.h).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "comm/rpc_client.h"
#include "layers/layer.h"
#include "plan/plan.h"
#include "train/local_updater.h"

namespace shoal {

class ParamTable {
 public:
  virtual ~ParamTable() = default;
  // Fills the params and says which step this worker trains next: 0 for a
  // fresh run, the servers' step for a worker that rejoins or resumes.
  virtual Status Join(uint64_t* step) = 0;
  // Hands over the gradients of step `step` and fills the params with
  // values of at least version `step` + 1, ready for the next step (a local
  // updater applies them in place). `loss` is the step's training loss
  // (easgd's adaptive period adds it up).
  virtual Status Push(uint64_t step, double loss) = 0;
  // Says this worker is done; fills the params with the final values.
  virtual Status Finish() = 0;
  // Hands an evaluation (JSON object) to the servers for their checkpoints.
  virtual Status Report(const std::string& metric) = 0;
  // Fills a whole net's params with the current values of every parameter
  // (a worker that holds only some evaluates the whole net).
  virtual Status FetchAll(const std::vector<Param*>& whole) = 0;
};

class LocalTable : public ParamTable {
 public:
  LocalTable(const Plan& plan, std::vector<Param*> params);
  Status Join(uint64_t* step) override {
    *step = 0;
    return Status::Ok();
  }
  Status Push(uint64_t step, double loss) override;
  Status Finish() override { return Status::Ok(); }
  Status Report(const std::string&) override { return Status::Ok(); }
  Status FetchAll(const std::vector<Param*>& whole) override;

 private:
  std::vector<Param*> params_;
  LocalUpdater updater_;
};

class RemoteTable : public ParamTable {
 public:
  // `params`: what worker `worker` holds (lib/plan/partition.h), named as the
  // plan's parameters. Every wait gives up after `timeout_ms`.
  RemoteTable(const Plan& plan, int worker, std::vector<Param*> params, int timeout_ms);
  Status Connect();
  Status Join(uint64_t* step) override;
  Status Push(uint64_t step, double loss) override;
  // easgd: sends the params' values as they are after step `step` and
  // subtracts the elastic difference each server answers with.
  Status Exchange(uint64_t step);
  Status Finish() override;
  Status Report(const std::string& metric) override;
  Status FetchAll(const std::vector<Param*>& whole) override;
  // Parameter bytes of training (gradients or values out, values or
  // differences in): as encoded on the wire (half of fp32's with cluster.wire: fp16).
  uint64_t bytes_sent() const { return bytes_sent_; }
  uint64_t bytes_received() const { return bytes_received_; }
  // Updates (easgd: exchanges) sent, each to every server: what the servers'
  // updates_from should count for this worker.
  uint64_t updates_sent() const { return updates_sent_; }

 private:
  struct Piece {
    uint32_t key;
    Param* param;
    size_t offset, count;
  };
  enum class Send { kNothing, kGrads, kValues };           // what a request carries of the params
  enum class Take { kNothing, kValues, kDifference };      // what a reply's entries do to them
  // One request to every server at once, then every reply. `steps` (if
  // given) receives each reply's step.
  Status RoundTrip(MsgType type, uint64_t step, Send send, Take take, const std::string& text = "",
                   std::vector<uint64_t>* steps = nullptr);
  // Copies a reply's slices into `pieces` (or subtracts them), which it must
  // match one for one.
  Status Absorb(int server, const MessageView& reply, const std::vector<Piece>& pieces, Take take);

  const Plan& plan_;
  int worker_;
  int timeout_ms_;
  uint64_t plan_hash_;
  ValueEncoding wire_ = ValueEncoding::kF32;  // cluster.wire: how gradients go and values come back
  std::vector<float> differences_;            // easgd: a reply's differences, decoded
  std::vector<std::unique_ptr<RpcClient>> clients_;
  std::vector<int> servers_;                // the ones this worker talks to (its server group)
  std::vector<std::vector<Piece>> pieces_;  // per server of servers_
  uint64_t bytes_sent_ = 0, bytes_received_ = 0;
  uint64_t updates_sent_ = 0;
};

}  // namespace shoal
