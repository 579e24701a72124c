// A cluster profile: what the planner knows about the machines (configs/clusters/*.yaml,
// or measured by `dl-plan calibrate`). Nodes have one full-duplex NIC each,
// shared by the node's workers, on a switch of a given backplane, optionally
// in racks whose switches join through an uplink.
#pragma once

#include <string>

#include "core/status.h"

namespace shoal {

struct ClusterProfile {
  std::string name = "loopback";   // the default: processes on one machine over loopback
  double bandwidth_gbps = 10.0;    // a node's NIC, each direction, gigabits per second
  double latency_us = 20.0;        // one message, one way, microseconds
  double gflops_per_worker = 10.0; // sustained sgemm rate of one worker, GFLOP/s
  int nodes = 0;                   // the node budget, servers' nodes included; 0: as many as asked
  int workers_per_node = 1;        // workers sharing a node and its NIC
  double backplane_gbps = 0.0;     // the switch, all ports together; 0: non-blocking
  int nodes_per_rack = 0;          // 0: one switch; else racks of this many nodes
  double uplink_gbps = 0.0;        // a rack's link to the others, each direction (with nodes_per_rack)

  double bytes_per_second() const { return bandwidth_gbps * 1e9 / 8.0; }
  double backplane_bytes_per_second() const { return backplane_gbps * 1e9 / 8.0; }  // 0: unbounded
  double uplink_bytes_per_second() const { return uplink_gbps * 1e9 / 8.0; }
  int WorkerNodes(int workers) const { return (workers + workers_per_node - 1) / workers_per_node; }
  // Racks the nodes of `workers` span (1 without racks).
  int Racks(int workers) const {
    return nodes_per_rack > 0 ? (WorkerNodes(workers) + nodes_per_rack - 1) / nodes_per_rack : 1;
  }
  double latency_seconds() const { return latency_us * 1e-6; }
  double flops_per_second() const { return gflops_per_worker * 1e9; }
};

// Parses a profile; errors name `source`:line:column and the field.
Status ParseClusterProfile(const std::string& text, const std::string& source, ClusterProfile* profile);
Status LoadClusterProfile(const std::string& path, ClusterProfile* profile);
std::string ClusterProfileToYaml(const ClusterProfile& profile, const std::string& comment);

}  // namespace shoal
