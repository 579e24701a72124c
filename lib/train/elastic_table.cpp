#include "train/elastic_table.h"

#include <map>

#include "plan/partition.h"

namespace shoal {
namespace {

// Per param, holders / workers: the share of the average a holder's gradient
// is, as the servers scale an async update. 1 for a layer split by records
// (the gradient of this worker's own records); 1/M for one split by features
// in a group of M, whose gradient covers the whole group's records.
std::vector<float> ShareOfAverage(const Plan& plan, int worker, const std::vector<Param*>& params) {
  const std::vector<int> holders = HoldersPerKey(plan);
  std::map<std::string, float> share;
  for (uint32_t key : KeysHeldBy(plan, worker))
    share[plan.slices[key].param] =
        static_cast<float>(holders[key]) / static_cast<float>(plan.workers.size());
  std::vector<float> out;
  for (const Param* p : params) out.push_back(share.at(p->name));
  return out;
}

}  // namespace

ElasticTable::ElasticTable(const Plan& plan, int worker, std::vector<Param*> params,
                           std::unique_ptr<RemoteTable> centre)
    : cluster_(plan.job.cluster),
      centre_(std::move(centre)),
      updater_(plan, params, ShareOfAverage(plan, worker, params)) {}

Status ElasticTable::Join(uint64_t* step) {
  loss_since_exchange_ = 0.0;
  return centre_->Join(step);
}

Status ElasticTable::Push(uint64_t step, double loss) {
  updater_.Apply(step);
  if (!ExchangeDue(step, loss)) return Status::Ok();
  loss_since_exchange_ = 0.0;
  return centre_->Exchange(step);
}

// Algorithm 1, lines 10-15: L = L + f(x); if L > L_cut, exchange and L = 0.
// A fixed period exchanges after steps tau − 1, 2·tau − 1, ...: a function
// of the step alone, so a rejoined worker keeps the schedule.
bool ElasticTable::ExchangeDue(uint64_t step, double loss) {
  if (!cluster_.easgd_adaptive) return (step + 1) % static_cast<uint64_t>(cluster_.easgd_tau) == 0;
  loss_since_exchange_ += loss;
  return loss_since_exchange_ > cluster_.easgd_loss_threshold;
}

}  // namespace shoal
