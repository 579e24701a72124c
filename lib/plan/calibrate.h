// `dl-plan calibrate`: measures a cluster profile where it runs: one worker
// thread's compute (sgemm; the fully connected and convolution layers' rates,
// their fall at small batches, the spread of a step's time), and NNG round-trip latency and bandwidth to an
// echo peer (one started in this process on loopback, or `peer`, a
// `dl-plan calibrate --serve` elsewhere). Every measurement is bounded in time.
#pragma once

#include <string>

#include "core/status.h"
#include "plan/cluster_profile.h"

namespace shoal {

struct CalibrateOptions {
  std::string peer;            // empty: an echo server in this process on loopback
  double seconds_each = 0.3;   // time spent on each measurement
  int nodes = 0;               // written into the profile
  std::string name = "calibrated";
  int timeout_ms = 5000;       // every send and receive
};

Status Calibrate(const CalibrateOptions& options, ClusterProfile* profile);

// Answers every request with a one-byte reply for `seconds` (the peer of a calibration).
Status ServeEcho(const std::string& endpoint, double seconds);

}  // namespace shoal
