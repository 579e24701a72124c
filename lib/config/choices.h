// The job's closed choices: an enum each, with its names and traits in one
// table. ParseJob reads a name once (Fields::Choice); the rest of the program
// compares enums and asks the tables.
#pragma once

#include <cstddef>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "comm/message.h"
#include "ops/blas.h"

namespace shoal {

// cluster.consistency: how servers handle updates and reads (lib/ps/consistency.h).
enum class ConsistencyModel { kBsp, kAsync, kSsp, kEasgd };

// What each consistency model does, in one row each.
struct ConsistencyTraits {
  ConsistencyModel model;
  const char* name;
  // A step's updates from every worker make one version, applied once.
  bool one_version_a_step;
  // Workers send gradients; false: they exchange their replicas' values
  // with the servers' elastic centre (EASGD).
  bool takes_gradients;
  // Reads wait until every worker is within cluster.staleness steps.
  bool bounded_staleness;
};
inline constexpr ConsistencyTraits kConsistencyModels[] = {
    {ConsistencyModel::kBsp, "bsp", true, true, false},
    {ConsistencyModel::kAsync, "async", false, true, false},
    {ConsistencyModel::kSsp, "ssp", false, true, true},
    {ConsistencyModel::kEasgd, "easgd", false, false, false},
};
const ConsistencyTraits& TraitsOf(ConsistencyModel model);

// train.updater, in the order of torch.optim's rules (lib/ps/updater.h).
enum class UpdateRule { kSgd, kMomentum, kNesterov, kAdagrad, kRmsprop, kAdam };

// train.algorithm: back-propagation, or contrastive divergence (an RBM).
enum class Algorithm { kBp, kCd };

// train.lr_schedule.kind (lib/ps/lr_schedule.h has the formulas).
enum class LrDecay { kConstant, kStep, kExponential, kCosine };

// train.eval_on: the set evaluations during training use.
enum class EvalSet { kVal, kTest };

// cluster.sync_topology: which server groups sync with which.
enum class SyncTopology { kAll, kRing };

// dl-plan --strategy: how the partitioning is chosen.
enum class Strategy { kOptimal, kData, kModel };

// dl-plan --exchange: how parameters are exchanged: as the job says
// (cluster.server_worker_separate), through servers of their own, through a
// server with every worker (AllReduce: a reduce-scatter and an all-gather),
// or whichever dl-plan predicts faster.
enum class Exchange { kJob, kServers, kAllReduce, kAuto };

// A choice's name, for the tables below.
template <typename E>
struct Named {
  E value;
  const char* name;
};

// Each enum's names, in the enum's order.
inline constexpr Named<UpdateRule> kUpdateRules[] = {
    {UpdateRule::kSgd, "sgd"},           {UpdateRule::kMomentum, "momentum"},
    {UpdateRule::kNesterov, "nesterov"}, {UpdateRule::kAdagrad, "adagrad"},
    {UpdateRule::kRmsprop, "rmsprop"},   {UpdateRule::kAdam, "adam"},
};
inline constexpr Named<Algorithm> kAlgorithms[] = {{Algorithm::kBp, "bp"}, {Algorithm::kCd, "cd"}};
inline constexpr Named<LrDecay> kLrDecays[] = {{LrDecay::kConstant, "constant"},
                                               {LrDecay::kStep, "step"},
                                               {LrDecay::kExponential, "exponential"},
                                               {LrDecay::kCosine, "cosine"}};
// cluster.wire: how gradients and parameter values travel (comm/message.h).
inline constexpr Named<ValueEncoding> kWires[] = {{ValueEncoding::kF32, EncodingName(ValueEncoding::kF32)},
                                                  {ValueEncoding::kF16, EncodingName(ValueEncoding::kF16)}};
// train.compute: the precision of products and convolutions (ops/blas.h).
inline constexpr Named<Precision> kPrecisions[] = {{Precision::kFp32, "fp32"}, {Precision::kBf16, "bf16"}};
inline constexpr Named<EvalSet> kEvalSets[] = {{EvalSet::kVal, "val"}, {EvalSet::kTest, "test"}};
inline constexpr Named<SyncTopology> kSyncTopologies[] = {{SyncTopology::kAll, "all"},
                                                          {SyncTopology::kRing, "ring"}};
inline constexpr Named<Strategy> kStrategies[] = {
    {Strategy::kOptimal, "optimal"}, {Strategy::kData, "data"}, {Strategy::kModel, "model"}};
inline constexpr Named<Exchange> kExchanges[] = {{Exchange::kJob, "job"},
                                                 {Exchange::kServers, "servers"},
                                                 {Exchange::kAllReduce, "allreduce"},
                                                 {Exchange::kAuto, "auto"}};

// Where each enum's table is, so that Name and ParseName serve them all.
template <typename E>
struct ChoiceTable;
template <>
struct ChoiceTable<UpdateRule> {
  static constexpr const auto& rows = kUpdateRules;
};
template <>
struct ChoiceTable<Algorithm> {
  static constexpr const auto& rows = kAlgorithms;
};
template <>
struct ChoiceTable<LrDecay> {
  static constexpr const auto& rows = kLrDecays;
};
template <>
struct ChoiceTable<ValueEncoding> {
  static constexpr const auto& rows = kWires;
};
template <>
struct ChoiceTable<Precision> {
  static constexpr const auto& rows = kPrecisions;
};
template <>
struct ChoiceTable<EvalSet> {
  static constexpr const auto& rows = kEvalSets;
};
template <>
struct ChoiceTable<SyncTopology> {
  static constexpr const auto& rows = kSyncTopologies;
};
template <>
struct ChoiceTable<Strategy> {
  static constexpr const auto& rows = kStrategies;
};
template <>
struct ChoiceTable<Exchange> {
  static constexpr const auto& rows = kExchanges;
};
template <>
struct ChoiceTable<ConsistencyModel> {
  static constexpr const auto& rows = kConsistencyModels;
};

template <typename E>
constexpr E RowValue(const Named<E>& row) {
  return row.value;
}
constexpr ConsistencyModel RowValue(const ConsistencyTraits& row) { return row.model; }

// Each table lists its enum's values in order, so a value indexes its row.
template <typename E>
constexpr bool InEnumOrder() {
  size_t i = 0;
  for (const auto& row : ChoiceTable<E>::rows)
    if (static_cast<size_t>(RowValue(row)) != i++) return false;
  return true;
}

// The name of `value`, as a job file writes it.
template <typename E>
constexpr const char* Name(E value) {
  return ChoiceTable<E>::rows[static_cast<size_t>(value)].name;
}

// Every name of E, in order: what a job may write.
template <typename E>
std::vector<std::string> Names() {
  std::vector<std::string> names;
  for (const auto& row : ChoiceTable<E>::rows) names.push_back(row.name);
  return names;
}

// The value called `name`; false if none is.
template <typename E>
bool ParseName(const std::string& name, E* out) {
  for (const auto& row : ChoiceTable<E>::rows)
    if (name == row.name) {
      *out = RowValue(row);
      return true;
    }
  return false;
}

// A choice in JSON is its name (nlohmann would write the enum's number).
inline void to_json(nlohmann::json& j, ConsistencyModel v) { j = Name(v); }
inline void to_json(nlohmann::json& j, UpdateRule v) { j = Name(v); }
inline void to_json(nlohmann::json& j, Algorithm v) { j = Name(v); }
inline void to_json(nlohmann::json& j, LrDecay v) { j = Name(v); }
inline void to_json(nlohmann::json& j, SyncTopology v) { j = Name(v); }
inline void to_json(nlohmann::json& j, EvalSet v) { j = Name(v); }
inline void to_json(nlohmann::json& j, Precision v) { j = Name(v); }
inline void to_json(nlohmann::json& j, Strategy v) { j = Name(v); }
inline void to_json(nlohmann::json& j, Exchange v) { j = Name(v); }
inline void to_json(nlohmann::json& j, ValueEncoding v) { j = Name(v); }

// The state a rule keeps per value, by name: "velocity" (momentum, nesterov),
// "sum_sq" (adagrad), "square_avg" (rmsprop), "exp_avg" and "exp_avg_sq"
// (adam); none for sgd. Checkpoints store each as "<param>@<name>"; the
// planner counts the arrays.
const std::vector<std::string>& UpdaterStateNames(UpdateRule rule);

}  // namespace shoal
