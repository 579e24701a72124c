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
  // Fills the params with values of at least version `version`.
  virtual Status Fetch(uint64_t version) = 0;
  // Hands over the gradients of step `step` and fills the params with
  // values of at least version `step` + 1, ready for the next step.
  virtual Status Push(uint64_t step) = 0;
  // Says this worker is done; fills the params with the final values.
  virtual Status Finish() = 0;
};

class LocalTable : public ParamTable {
 public:
  LocalTable(const Plan& plan, std::vector<Param*> params);
  Status Fetch(uint64_t) override { return Status::Ok(); }
  Status Push(uint64_t step) override;
  Status Finish() override { return Status::Ok(); }

 private:
  UpdaterConfig updater_;
  std::vector<Param*> params_;
  std::vector<std::vector<float>> velocity_;
};

class RemoteTable : public ParamTable {
 public:
  // Every wait gives up after `timeout_ms`.
  RemoteTable(const Plan& plan, int worker, std::vector<Param*> params, int timeout_ms);
  Status Connect();
  Status Fetch(uint64_t version) override;
  Status Push(uint64_t step) override;
  Status Finish() override;
  uint64_t bytes_sent() const { return bytes_sent_; }
  uint64_t bytes_received() const { return bytes_received_; }

 private:
  struct Piece {
    uint32_t key;
    Param* param;
    size_t offset, count;
  };
  // One request to every server at once, then every reply's parameters.
  Status RoundTrip(MsgType type, uint64_t step, bool with_grads);
  Status Absorb(int server, const MessageView& reply);

  const Plan& plan_;
  int worker_;
  int timeout_ms_;
  uint64_t plan_hash_;
  std::vector<std::unique_ptr<RpcClient>> clients_;
  std::vector<std::vector<Piece>> pieces_;  // per server
  uint64_t bytes_sent_ = 0, bytes_received_ = 0;
};

}  // namespace shoal
