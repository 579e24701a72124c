// `dl-plan calibrate --fit-run DIR`: each layer type's compute rate fitted
// to what training runs measured. A calibration measures one geometry per
// type (lib/plan/calibrate.h); a job's own layers run at other rates (small
// channels and planes), and the memory-bound layers between them (batch norm,
// ReLU, sums, pooling) at rates no sgemm predicts. A fit to the workers' own
// per-layer times prices them as they ran.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "plan/cluster_profile.h"
#include "plan/plan.h"

namespace shoal {

// A run as train-local writes it: plan.json, and each worker's records
// (worker-N.jsonl) whose last "done" record has the layers' forward and
// backward seconds over the steps it timed but the first (layer_steps).
struct FitRun {
  struct Worker {
    std::map<std::string, double> layer_s;  // per layer: forward and backward seconds a step
    double step_s = 0.0;                    // its median step
    int threads = 0;                        // its compute threads
    bool exchanged = false;                 // it sent updates to servers (not --standalone)
  };
  std::string dir;
  Plan plan;
  std::vector<Worker> workers;
};

// Reads and checks run `dir`. Fails, naming the run and the file, on: no
// plan.json; a plan whose workers exchange inside each step (groups of more
// than one, or synchronised batch norm: a layer's time there includes waits
// for the others) or train on a GPU (a layer's time there is what the host
// took to issue it); no worker's records, or one without a "done" record; a
// line longer than a record can be, or one holding "done" that is not a JSON
// object; times that are not finite numbers from 0 to 1e9 s; layer_steps or
// compute_threads that are not counts; workers of different compute threads.
// These are InvalidArgument, or IOError for a directory or file that cannot
// be read; LoadPlan's errors pass through. *run is part-filled then.
Status ReadFitRun(const std::string& dir, FitRun* run);

struct RateFit {
  // What became of the profile's bandwidth.
  enum class Network {
    kFitted,       // fitted to the steps of the runs that exchanged over loopback
    kFittedAtEnd,  // the same, at an end of the range searched
    kNotAsked,     // the profile's network is measured between machines (--peer), not loopback
    kNoExchange,   // no run exchanged with its servers over loopback
    kNoEffect,     // no run's predicted step depends on it anywhere in the range
  };
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
  int compute_threads = 0;        // of every run's workers
  double winograd_speedup = 1.0;  // the profile's after the fit
  double half_rate_inner = 0.0;   // the profile's after the fit
  Network network = Network::kNotAsked;
  double measured_gbps = 0.0, fitted_gbps = 0.0;  // the profile's bandwidth before and after
  std::vector<TypeRate> types;
  std::vector<RunCheck> runs;
};

// Sets `profile`'s layer_gflops, for every layer type with operations in the
// runs, to the rate at which the cost model (lib/plan/cost_model.h) gives
// the type's layers the seconds their workers measured; where convolutions
// ran on both kernels, the rate is fitted to the direct kernel's layers and
// winograd_speedup to the others. half_rate_inner is the one (0, or 1 to
// 65536) at which the layers whose products have inner lengths
// (convolutions) fit best, in their measured seconds times the square of
// the logarithm of predicted over measured; 0 unless another fits more than
// 1% better (lengths too alike say nothing of it); as it was where no layer
// has one. A speedup not refitted moves with half_rate_inner, so that the
// kernels' ratio on kCalibrationConvolution (lib/plan/calibrate.h) stays as
// it was. The rest of the profile
// is kept: its sgemm rate and its batch effect stay those of one thread,
// whatever threads the runs' workers computed on. Fails, naming the run, on
// runs of different compute threads, on a plan the cost model cannot price,
// on a fitted rate outside what a profile holds (1e-6 to 1e9 GFLOP/s), and
// where no layer has both operations and a measured time.
// These are InvalidArgument, or PlanJob's errors for a plan it cannot price;
// *profile and *fit may hold part of the fit then.
//
// With `fit_bandwidth` (a profile measured on loopback), the bandwidth is
// then fitted too, to the runs whose workers exchanged with servers on
// loopback: the one at which their predicted steps are nearest their
// measured ones (least squares of the logarithm of their ratio), between
// 0.01 and 10000 Gbit/s. A server's own link (server_gbps), where set, moves
// with it. A calibration's loopback measure depends on how long it measures,
// and what a step's exchange costs on top of the wire (copies, the
// messages' framing) is part of what the runs measured. The best fit may be
// an end of the range: the fastest where the runs' layers alone take their
// steps (the exchange hid behind compute on cores the layers left idle), the
// slowest where no bandwidth explains steps that long. The bandwidth stays
// where no run exchanged, or where no bandwidth in the range moves any run's
// predicted step by 2% (nothing of theirs travels).
Status FitLayerRates(const std::vector<FitRun>& runs, bool fit_bandwidth, ClusterProfile* profile,
                     RateFit* fit);

// The fit as a table: each type's rate, then each run's step predicted
// against measured.
std::string DescribeFit(const RateFit& fit);

}  // namespace shoal
