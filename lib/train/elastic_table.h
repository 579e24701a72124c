// easgd's worker side (Zhang, Choromanska and LeCun 2015; DeepSpark's
// Algorithm 1): the worker trains a replica of its own with the job's
// updater, starting from the servers' centre, and exchanges with the centre
// after every cluster.easgd_tau-th step, or, with easgd_adaptive, after each
// step at which its loss summed since the last exchange passes
// easgd_loss_threshold (the sum then starts again from 0). An exchange sends
// the replica's values; each server moves the centre by the elastic
// difference d = alpha·(x − centre) and answers with d, which the replica
// subtracts. Evaluation (FetchAll) and the end (Finish) read the centre: the
// model elastic averaging trains.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "train/local_updater.h"
#include "train/param_table.h"

namespace shoal {

// A worker's replica under easgd, exchanging with the servers' centre now and then.
class ElasticTable : public ParamTable {
 public:
  // `params`: what worker `worker` holds; `centre`: the servers, connected.
  ElasticTable(const Plan& plan, int worker, std::vector<Param*> params, std::unique_ptr<RemoteTable> centre);
  // The replica starts as the centre (Algorithm 1, line 5). Returns RemoteTable::Join's errors.
  Status Join(uint64_t* step) override;
  // The local update of step `step`, then the exchange when one is due.
  // Returns RemoteTable::Exchange's errors; the local update is applied even then.
  Status Push(uint64_t step, double loss) override;
  Status Finish() override { return centre_->Finish(); }
  Status Report(const std::string& metric) override { return centre_->Report(metric); }
  std::unique_ptr<Keepalive> KeepBusy(const std::string& what) override { return centre_->KeepBusy(what); }
  void Computing(uint64_t step) override { centre_->Computing(step); }
  void Computed() override { centre_->Computed(); }
  Status FetchAll(const std::vector<Param*>& whole, uint64_t version) override {
    return centre_->FetchAll(whole, version);
  }

 private:
  // Whether step `step`, whose training loss was `loss`, ends with an exchange.
  bool ExchangeDue(uint64_t step, double loss);

  const ClusterConfig& cluster_;
  std::unique_ptr<RemoteTable> centre_;
  LocalUpdater updater_;
  double loss_since_exchange_ = 0.0;  // easgd_adaptive: Algorithm 1's L
};

}  // namespace shoal
