// A cluster profile: what the planner knows about the machines (configs/clusters/*.yaml,
// or measured by `dl-plan calibrate`). One worker per node.
#pragma once

#include <string>

#include "core/status.h"

namespace shoal {

struct ClusterProfile {
  std::string name = "loopback";   // the default: processes on one machine over loopback
  double bandwidth_gbps = 10.0;    // per worker link, gigabits per second
  double latency_us = 20.0;        // one message, one way, microseconds
  double gflops_per_worker = 10.0; // sustained sgemm rate of one worker, GFLOP/s
  int nodes = 0;                   // the node budget; 0: as many as asked

  double bytes_per_second() const { return bandwidth_gbps * 1e9 / 8.0; }
  double latency_seconds() const { return latency_us * 1e-6; }
  double flops_per_second() const { return gflops_per_worker * 1e9; }
};

// Parses a profile; errors name `source`:line:column and the field.
Status ParseClusterProfile(const std::string& text, const std::string& source, ClusterProfile* profile);
Status LoadClusterProfile(const std::string& path, ClusterProfile* profile);
std::string ClusterProfileToYaml(const ClusterProfile& profile, const std::string& comment);

}  // namespace shoal
