// Tests for lib/ps/lr_schedule (and the scheduled rate an update uses).
// Reference factors: PyTorch's StepLR, ExponentialLR, CosineAnnealingLR, LinearLR and
// ChainedScheduler, stepped once per update with base rate 1, computed once by
// tests/unit/ps/updater_reference.py under /usr/bin/python3 (torch 1.13).
#include "ps/lr_schedule.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ps/updater.h"

namespace shoal {
namespace {

LrSchedule Schedule(const std::string& kind, int every, double gamma, int warmup_steps) {
  LrSchedule s;
  REQUIRE(ParseName(kind, &s.kind));
  s.every = every;
  s.gamma = gamma;
  s.warmup_steps = warmup_steps;
  return s;
}

void CheckFactors(const LrSchedule& s, const std::vector<double>& torch) {
  for (size_t t = 0; t < torch.size(); ++t) {
    INFO("update " << t);
    CHECK(ScheduleFactor(s, t) == doctest::Approx(torch[t]).epsilon(1e-9));
  }
}

TEST_CASE("constant: factor 1 at every update") {
  CheckFactors(Schedule("constant", 0, 0.1, 0), {1, 1, 1, 1, 1, 1, 1, 1});
}

TEST_CASE("cosine: half a cosine from 1 to 0 over 'every' updates, as CosineAnnealingLR(T_max=6)") {
  CheckFactors(Schedule("cosine", 6, 0.1, 0), {1, 0.933012701892, 0.75, 0.5, 0.25, 0.0669872981078, 0, 0});
}

TEST_CASE("step: × gamma every 'every' updates, as StepLR(step_size=3, gamma=0.5)") {
  CheckFactors(Schedule("step", 3, 0.5, 0), {1, 1, 1, 0.5, 0.5, 0.5, 0.25, 0.25});
}

TEST_CASE("exponential with every 1: × gamma per update, as ExponentialLR(gamma=0.9)") {
  CheckFactors(Schedule("exponential", 1, 0.9, 0),
               {1, 0.9, 0.81, 0.729, 0.6561, 0.59049, 0.531441, 0.4782969});
}

TEST_CASE("exponential with every N: gamma^(t/N), smooth, reaching × gamma at each multiple of N") {
  const LrSchedule s = Schedule("exponential", 10, 0.5, 0);
  CHECK(ScheduleFactor(s, 0) == 1.0);
  CHECK(ScheduleFactor(s, 5) == doctest::Approx(std::sqrt(0.5)));
  CHECK(ScheduleFactor(s, 10) == doctest::Approx(0.5));
  CHECK(ScheduleFactor(s, 25) == doctest::Approx(std::pow(0.5, 2.5)));
}

TEST_CASE("warm-up alone: (t + 1)/W up to 1, as LinearLR(start_factor=1/4, total_iters=3)") {
  CheckFactors(Schedule("constant", 0, 0.1, 4), {0.25, 0.5, 0.75, 1, 1, 1, 1, 1});
}

TEST_CASE("warm-up times a decay counted from update 0, as ChainedScheduler([LinearLR, StepLR])") {
  CheckFactors(Schedule("step", 3, 0.5, 4), {0.25, 0.5, 0.75, 0.5, 0.5, 0.5, 0.25, 0.25});
}

TEST_CASE("warm-up times exponential decay, as ChainedScheduler([LinearLR, ExponentialLR])") {
  CheckFactors(Schedule("exponential", 1, 0.9, 4),
               {0.25, 0.45, 0.6075, 0.729, 0.6561, 0.59049, 0.531441, 0.4782969});
}

TEST_CASE("warm-up of 1 update is no warm-up") {
  CheckFactors(Schedule("step", 2, 0.1, 1), {1, 1, 0.1, 0.1, 0.01});
}

TEST_CASE("an update takes the learning rate scheduled for the version it makes") {
  UpdaterConfig c;
  c.rule = UpdateRule::kSgd;
  c.learning_rate = 0.2;
  c.schedule = Schedule("step", 3, 0.5, 4);
  CHECK(LearningRateAt(c, 0) == doctest::Approx(0.05f));
  CHECK(LearningRateAt(c, 3) == doctest::Approx(0.1f));
  CHECK(LearningRateAt(c, 6) == doctest::Approx(0.05f));
  // sgd: w −= lr·g, with lr 0.2 · 0.75 at update 2.
  float w = 1.0f;
  const float g = 2.0f;
  UpdaterState none = NewUpdaterState(c, 1);
  ApplyUpdate(c, 2, 1, &g, &w, &none);
  CHECK(w == doctest::Approx(1.0f - 0.15f * 2.0f));
}

}  // namespace
}  // namespace shoal
