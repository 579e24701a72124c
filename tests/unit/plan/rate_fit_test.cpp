// Tests for lib/plan/rate_fit: a fit to layer times that a known profile
// gives recovers that profile's rates, and the inner-length effect only
// where the layers' lengths tell it.
#include "plan/rate_fit.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "config/job.h"
#include "core/env_switch.h"
#include "plan/cost_model.h"
#include "plan/planner.h"
#include "test_util.h"

namespace shoal {
namespace {

// A run of `job_path` whose one worker took, for each layer, the seconds the
// cost model gives it under `truth`; its step is their sum.
FitRun RunUnder(const std::string& job_path, const ClusterProfile& truth) {
  FitRun run;
  run.dir = job_path;
  Status s = LoadJobFile(std::string(SHOAL_SOURCE_DIR) + "/" + job_path, {}, &run.plan.job);
  INFO(s.ToString());
  REQUIRE(s.ok());
  PlannerOptions options;
  options.strategy = Strategy::kData;
  options.profile = truth;
  PartitionReport report;
  s = PlanJob(run.plan.job, options, &report);
  INFO(s.ToString());
  REQUIRE(s.ok());
  FitRun::Worker worker;
  worker.threads = 1;
  for (size_t l = 0; l < report.layers.size(); ++l) {
    const double seconds = NodeCost(report.layers[l], report.choices[l], report.grouping, truth).compute_s;
    worker.layer_s[report.layers[l].name] = seconds;
    worker.step_s += seconds;
  }
  run.workers.push_back(worker);
  return run;
}

ClusterProfile Truth() {
  ClusterProfile p;
  p.gflops_per_worker = 100;
  p.layer_gflops = {{"convolution", 200}, {"batch_norm", 5}, {"add", 3}};
  p.winograd_speedup = 2.5;
  p.half_rate_inner = 100;
  return p;
}

TEST_CASE("a fit to ResNet-20's layer times finds its convolutions' rate, speedup and short sums") {
  const ClusterProfile truth = Truth();
  ClusterProfile profile;  // as a calibration would start it: other rates, no inner effect
  profile.gflops_per_worker = 50;
  profile.winograd_speedup = 1.5;
  RateFit fit;
  Status s = FitLayerRates({RunUnder("configs/resnet20.yaml", truth)}, false, &profile, &fit);
  INFO(s.ToString());
  REQUIRE(s.ok());
  // A grid of four points an octave: within a twelfth of an octave of the truth's.
  CHECK(fit.half_rate_inner == doctest::Approx(100).epsilon(0.1));
  CHECK(profile.half_rate_inner == fit.half_rate_inner);
  CHECK(profile.layer_gflops.at("convolution") == doctest::Approx(200).epsilon(0.1));
  CHECK(profile.layer_gflops.at("batch_norm") == doctest::Approx(5));
  if (EnvSwitchOn("SHOAL_WINOGRAD")) CHECK(fit.winograd_speedup == doctest::Approx(2.5).epsilon(0.1));
  REQUIRE(fit.runs.size() == 1);
  CHECK(fit.runs[0].predicted_step_s == doctest::Approx(fit.runs[0].measured_step_s).epsilon(0.02));
  CHECK(Contains(DescribeFit(fit), "K/(K + "));
}

TEST_CASE("a fit leaves the inner-length effect alone where the lengths cannot tell it") {
  ClusterProfile truth = Truth();
  truth.half_rate_inner = 0;
  ClusterProfile profile;
  profile.gflops_per_worker = 50;
  RateFit fit;
  Status s = FitLayerRates({RunUnder("configs/resnet20.yaml", truth)}, false, &profile, &fit);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(fit.half_rate_inner == 0.0);  // the times have no such effect: none is fitted
  CHECK(profile.layer_gflops.at("convolution") == doctest::Approx(200));
  CHECK(!Contains(DescribeFit(fit), "K/(K + "));
  // An MLP has no products of inner lengths: a profile's effect stays as it was.
  profile.half_rate_inner = 64;
  s = FitLayerRates({RunUnder("configs/fashion-mlp.yaml", truth)}, false, &profile, &fit);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(profile.half_rate_inner == 64);
}

}  // namespace
}  // namespace shoal
