// `dl-plan calibrate`: measures a cluster profile where it runs: one worker
// thread's compute (sgemm; the fully connected and convolution layers' rates,
// their fall at small batches, the spread of a step's time, a server's memory
// rate), and over NNG the round-trip latency and the bandwidth each way with
// both directions busy at once, to echo peers: one started in this process on
// loopback, or `peers`, each a `dl-plan calibrate --serve` elsewhere, all at
// once (so a node's NIC, not one path, is measured). Every measurement is
// bounded in time.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "ops/convolution.h"
#include "plan/cluster_profile.h"

namespace shoal {

struct CalibrateOptions {
  std::vector<std::string> peers;  // none: an echo server in this process on loopback
  double seconds_each = 0.3;       // time spent on each measurement
  int nodes = 0;                   // written into the profile
  std::string name = "calibrated";
  int timeout_ms = 5000;  // every send and receive
};

// IOError where a socket, a dial, a send or a receive fails, naming the peer
// where it can; *profile then holds defaults, the name and nodes, and maybe compute rates.
Status Calibrate(const CalibrateOptions& options, ClusterProfile* profile);

// The convolution whose step gives the convolution rate and winograd_speedup:
// 64 channels to 64, 5 × 5, on 28 × 28, padded.
constexpr ConvGeometry kCalibrationConvolution{64, 28, 28, 64, 5, 1, 2};

// Answers every request with itself for `seconds` (the peer of a calibration).
// IOError where it cannot listen at `endpoint`; later failures are not reported.
Status ServeEcho(const std::string& endpoint, double seconds);

}  // namespace shoal
