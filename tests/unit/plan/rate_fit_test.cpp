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

JobConfig JobFile(const std::string& path) {
  JobConfig job;
  Status s = LoadJobFile(std::string(SHOAL_SOURCE_DIR) + "/" + path, {}, &job);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return job;
}

// A run of `job` whose one worker took, for each layer, the seconds the cost
// model gives it under `truth`, and the step it predicts there.
FitRun RunUnder(const JobConfig& job, const ClusterProfile& truth) {
  FitRun run;
  run.dir = job.name;
  run.plan.job = job;
  PlannerOptions options;
  options.strategy = Strategy::kData;
  options.profile = truth;
  PartitionReport report;
  Status s = PlanJob(run.plan.job, options, &report);
  INFO(s.ToString());
  REQUIRE(s.ok());
  FitRun::Worker worker;
  worker.threads = 1;
  for (size_t l = 0; l < report.layers.size(); ++l) {
    const double seconds = NodeCost(report.layers[l], report.choices[l], report.grouping, truth).compute_s;
    worker.layer_s[report.layers[l].name] = seconds;
  }
  worker.step_s =
      EvaluateChoices(report.layers, report.choices, report.ranks, report.grouping, truth).seconds;
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
  Status s = FitLayerRates({RunUnder(JobFile("configs/resnet20.yaml"), truth)}, false, &profile, &fit);
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
  Status s = FitLayerRates({RunUnder(JobFile("configs/resnet20.yaml"), truth)}, false, &profile, &fit);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(fit.half_rate_inner == 0.0);  // the times have no such effect: none is fitted
  CHECK(profile.layer_gflops.at("convolution") == doctest::Approx(200));
  CHECK(!Contains(DescribeFit(fit), "K/(K + "));
  // An MLP has no products of inner lengths: a profile's effect stays as it was.
  profile.half_rate_inner = 64;
  s = FitLayerRates({RunUnder(JobFile("configs/fashion-mlp.yaml"), truth)}, false, &profile, &fit);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(profile.half_rate_inner == 64);
}

TEST_CASE("a fit leaves the inner-length effect at 0 where every convolution's sums are as long") {
  JobConfig job;
  // Two 16-channel 3 × 3 convolutions (too few channels for Winograd's kernel): one length, 144.
  REQUIRE(ParseJob("name: same\nmodel:\n  layers:\n"
                   "    - {name: data, type: data, shape: [16, 16, 16]}\n"
                   "    - {name: c1, type: convolution, srclayers: data, num_output: 16, kernel: 3, pad: 1}\n"
                   "    - {name: c2, type: convolution, srclayers: c1, num_output: 16, kernel: 3, pad: 1}\n"
                   "    - {name: fc, type: fully_connected, srclayers: c2, num_output: 10}\n"
                   "    - {name: loss, type: softmax_loss, srclayers: [fc, data]}\n"
                   "train: {batch_size: 8}\n",
                   "same.yaml", &job)
              .ok());
  ClusterProfile profile;
  profile.gflops_per_worker = 50;
  RateFit fit;
  Status s = FitLayerRates({RunUnder(job, Truth())}, false, &profile, &fit);  // the truth's h is 100
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(fit.half_rate_inner == 0.0);  // one length cannot tell h from the rate
  CHECK(profile.layer_gflops.at("convolution") == doctest::Approx(200 * 144 / 244.0));
  CHECK(fit.runs[0].predicted_step_s == doctest::Approx(fit.runs[0].measured_step_s));
}

TEST_CASE("a fit to direct convolutions alone keeps the calibration's ratio of the two kernels") {
  // AlexNet-67's convolutions all run on the direct kernel: the speedup is not
  // refitted, and must say at the fitted h what calibrate measured at h = 0.
  ClusterProfile profile;
  profile.gflops_per_worker = 50;
  profile.winograd_speedup = 2;  // as calibrate measures it on its convolution, h = 0
  RateFit fit;
  Status s = FitLayerRates({RunUnder(JobFile("configs/alexnet-67.yaml"), Truth())}, false, &profile, &fit);
  INFO(s.ToString());
  REQUIRE(s.ok());
  const double h = fit.half_rate_inner;
  CHECK(h == doctest::Approx(100).epsilon(0.1));
  // The calibration's convolution: sums of 64 × 25 on the direct kernel, of 64 on Winograd's.
  const double direct = 1600 / (1600 + h), winograd = 64 / (64 + h);
  CHECK(profile.winograd_speedup * winograd / direct == doctest::Approx(2));
  CHECK(fit.winograd_speedup == profile.winograd_speedup);
}

}  // namespace
}  // namespace shoal
