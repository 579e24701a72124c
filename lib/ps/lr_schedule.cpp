#include "ps/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace shoal {
namespace {

double Decay(const LrSchedule& s, uint64_t t) {
  const int every =
      std::max(1, s.every);  // ParseJob refuses 0; a schedule built in code must not divide by it
  switch (s.kind) {
    case LrDecay::kConstant:
      return 1.0;
    case LrDecay::kStep:
      return std::pow(s.gamma, static_cast<double>(t / every));
    case LrDecay::kExponential:
      return std::pow(s.gamma, static_cast<double>(t) / every);
    case LrDecay::kCosine:
      return 0.5 * (1.0 + std::cos(M_PI * static_cast<double>(std::min<uint64_t>(t, every)) / every));
  }
  return 1.0;
}

double Warmup(const LrSchedule& s, uint64_t t) {
  if (s.warmup_steps <= 0) return 1.0;
  return std::min(1.0, static_cast<double>(t + 1) / s.warmup_steps);
}

}  // namespace

double ScheduleFactor(const LrSchedule& schedule, uint64_t t) {
  return Warmup(schedule, t) * Decay(schedule, t);
}

}  // namespace shoal
