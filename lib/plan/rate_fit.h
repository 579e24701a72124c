// `dl-plan calibrate --fit-run DIR`: each layer type's compute rate fitted
// to what training runs measured. A calibration measures one geometry per
// type (lib/plan/calibrate.h); a job's own layers run at other rates (small
// channels and planes), and the memory-bound layers between them (batch norm,
// ReLU, sums, pooling) at rates no sgemm predicts. A fit to the workers' own
// per-layer times prices them as they ran.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "plan/cluster_profile.h"

namespace shoal {

struct RateFit {
  struct TypeRate {
    std::string type;
    double gflops = 0.0;   // the fitted rate, as the profile's layer_gflops holds it
    int layers = 0;        // the runs' layers of this type it is fitted to
    double seconds = 0.0;  // their measured seconds a step, summed over the runs
  };
  struct RunCheck {
    std::string run;
    double measured_step_s = 0.0;   // the median of the workers' median steps
    double predicted_step_s = 0.0;  // the step dl-plan predicts for the run's plan under the fitted profile
  };
  int compute_threads = 0;        // of every run's workers: the profile describes such workers
  double winograd_speedup = 1.0;  // the profile's after the fit
  std::vector<TypeRate> types;
  std::vector<RunCheck> runs;
};

// Sets `profile`'s layer_gflops, for every layer type with operations in the
// runs, to the rate at which the cost model (lib/plan/cost_model.h) gives
// the type's layers the seconds their workers measured; where convolutions
// ran on both kernels, the rate is fitted to the direct kernel's layers and
// winograd_speedup to the others (else it stays). A run is a directory
// train-local wrote: plan.json and each worker's records (worker-N.jsonl),
// whose last "done" record has the layers' forward and backward seconds over
// the steps it timed but the first (layer_steps). The rest of the profile is kept.
// Fails, naming the run and the file, on: a directory without plan.json or
// without a worker's "done" record; a plan whose groups hold more than one
// worker (a layer's time there includes waits for the group); a record that
// is not JSON, or whose times are not finite numbers of zero or more; a
// record without one of the plan's layers; runs whose workers computed on
// different numbers of threads.
Status FitLayerRates(const std::vector<std::string>& run_dirs, ClusterProfile* profile, RateFit* fit);

// The fit as a table: each type's rate, then each run's step predicted
// against measured.
std::string DescribeFit(const RateFit& fit);

}  // namespace shoal
