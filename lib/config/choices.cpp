#include "config/choices.h"

namespace shoal {

static_assert(InEnumOrder<ConsistencyModel>() && InEnumOrder<UpdateRule>() && InEnumOrder<Algorithm>() &&
                  InEnumOrder<LrDecay>() && InEnumOrder<EvalSet>() && InEnumOrder<ValueEncoding>() &&
                  InEnumOrder<Precision>() && InEnumOrder<SyncTopology>() && InEnumOrder<Strategy>() &&
                  InEnumOrder<Exchange>(),
              "every choice table lists its enum's values in order");

const ConsistencyTraits& TraitsOf(ConsistencyModel model) {
  return kConsistencyModels[static_cast<size_t>(model)];
}

const std::vector<std::string>& UpdaterStateNames(UpdateRule rule) {
  static const std::vector<std::string> kNone, kVelocity{"velocity"}, kSumSq{"sum_sq"},
      kSquareAvg{"square_avg"}, kAdam{"exp_avg", "exp_avg_sq"};
  static const std::vector<std::string>* const kByRule[] = {&kNone,  &kVelocity,  &kVelocity,
                                                            &kSumSq, &kSquareAvg, &kAdam};
  static_assert(std::size(kByRule) == std::size(kUpdateRules), "every rule names its state");
  return *kByRule[static_cast<size_t>(rule)];
}

}  // namespace shoal
