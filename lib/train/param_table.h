// Where a worker's parameters come from and its gradients go: the servers of
// the plan (RemoteTable), or an updater in the same process (LocalTable, for
// single-process runs and benchmarks).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "comm/rpc_client.h"
#include "layers/layer.h"
#include "plan/plan.h"
#include "ps/updater.h"

namespace shoal {

class ParamTable {
 public:
  virtual ~ParamTable() = default;
  // Fills the params and says which step this worker trains next: 0 for a
  // fresh run, the servers' step for a worker that rejoins or resumes.
  virtual Status Join(uint64_t* step) = 0;
  // Hands over the gradients of step `step` and fills the params with
  // values of at least version `step` + 1, ready for the next step.
  virtual Status Push(uint64_t step) = 0;
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
  Status Push(uint64_t step) override;
  Status Finish() override { return Status::Ok(); }
  Status Report(const std::string&) override { return Status::Ok(); }
  Status FetchAll(const std::vector<Param*>& whole) override;

 private:
  UpdaterConfig updater_;
  std::vector<Param*> params_;
  std::vector<UpdaterState> state_;  // per param
};

class RemoteTable : public ParamTable {
 public:
  // `params`: what worker `worker` holds (lib/plan/partition.h), named as the
  // plan's parameters. Every wait gives up after `timeout_ms`.
  RemoteTable(const Plan& plan, int worker, std::vector<Param*> params, int timeout_ms);
  Status Connect();
  Status Join(uint64_t* step) override;
  Status Push(uint64_t step) override;
  Status Finish() override;
  Status Report(const std::string& metric) override;
  Status FetchAll(const std::vector<Param*>& whole) override;
  // Parameter bytes of training (gradients out, values in): the values'
  // bytes as encoded on the wire (half of fp32's with cluster.wire: fp16).
  uint64_t bytes_sent() const { return bytes_sent_; }
  uint64_t bytes_received() const { return bytes_received_; }

 private:
  struct Piece {
    uint32_t key;
    Param* param;
    size_t offset, count;
  };
  // One request to every server at once, then every reply: its parameters
  // when `fill` is set. `steps` (if given) receives each reply's step.
  Status RoundTrip(MsgType type, uint64_t step, bool with_grads, bool fill = true,
                   const std::string& text = "", std::vector<uint64_t>* steps = nullptr);
  // Copies a reply's slices into `pieces`, which it must match one for one.
  Status Absorb(int server, const MessageView& reply, const std::vector<Piece>& pieces);

  const Plan& plan_;
  int worker_;
  int timeout_ms_;
  uint64_t plan_hash_;
  ValueEncoding wire_ = ValueEncoding::kF32;  // cluster.wire: how gradients go and values come back
  std::vector<std::unique_ptr<RpcClient>> clients_;
  std::vector<std::vector<Piece>> pieces_;  // per server
  uint64_t bytes_sent_ = 0, bytes_received_ = 0;
};

}  // namespace shoal
