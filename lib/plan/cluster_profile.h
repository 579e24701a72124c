// A cluster profile: what the planner knows about the machines (configs/clusters/*.yaml,
// or measured by `dl-plan calibrate`). Nodes have one full-duplex NIC each,
// shared by the node's workers, on a switch of a given backplane, optionally
// in racks whose switches join through an uplink.
#pragma once

#include <map>
#include <string>

#include "core/status.h"

namespace shoal {

// What a profile's winograd_speedup may be.
constexpr double kLowestWinogradSpeedup = 0.01, kHighestWinogradSpeedup = 100.0;

// The share of a rate that products whose sums are `inner` long keep under
// half_rate_inner `half`: K/(K + h), or all of it where either is 0.
double ShortSumShare(double inner, double half);

struct ClusterProfile {
  std::string name = "loopback";    // the default: processes on one machine over loopback
  double bandwidth_gbps = 10.0;     // a node's NIC, each direction, gigabits per second
  double latency_us = 20.0;         // one message, one way, microseconds
  double gflops_per_worker = 10.0;  // sustained sgemm rate of one worker, GFLOP/s
  int nodes = 0;                    // the node budget, servers' nodes included; 0: as many as asked
  double server_gbps = 0.0;         // a server node's NIC, each direction; 0: as bandwidth_gbps
  int workers_per_node = 1;         // workers sharing a node and its NIC
  double backplane_gbps = 0.0;      // the switch, all ports together; 0: non-blocking
  int nodes_per_rack = 0;           // 0: one switch; else racks of this many nodes
  double uplink_gbps = 0.0;         // a rack's link to the others, each direction (with nodes_per_rack)
  // Compute as it runs: a layer type's own sustained rate (else
  // gflops_per_worker), lower at small batches (half of it in products of
  // half_rate_records rows; 0: no batch effect).
  std::map<std::string, double> layer_gflops;
  double half_rate_records = 0.0;
  // Products whose sums are short run below the rate: those of inner length
  // K (LayerFacts::inner) at K/(K + half_rate_inner) of it, the rate then
  // being that of long sums. 0: no such effect. CPU workers: a GPU's profile
  // leaves it at 0, as it leaves winograd_speedup at 1.
  double half_rate_inner = 0.0;
  // How many times faster than the convolution rate a convolution runs where
  // Winograd's kernel computes it (ops/winograd_convolution.h: CPU workers,
  // stride 1, small kernels, 16 or 32 channels or more), in direct FLOPs; 1: never
  // faster (a GPU's profile, or a build without it).
  double winograd_speedup = 1.0;
  double compute_cv = 0.0;          // spread of a worker's step compute (std/mean): BSP waits for the slowest
  double compute_cv_seconds = 0.0;  // the length of the steps compute_cv was measured on; 0: it holds for any
  // A server's memory rate, bytes read and written per second (GB/s): what
  // it sums, updates and copies into replies once a lane's last gradient is
  // in, on the step's critical path. 0: free.
  double server_memory_gb_per_s = 0.0;
  double host_device_gbps = 0.0;  // GPU workers: parameters and gradients cross PCIe each step; 0: none

  double bytes_per_second() const { return bandwidth_gbps * 1e9 / 8.0; }
  double server_bytes_per_second() const {
    return (server_gbps > 0 ? server_gbps : bandwidth_gbps) * 1e9 / 8.0;
  }
  double backplane_bytes_per_second() const { return backplane_gbps * 1e9 / 8.0; }  // 0: unbounded
  double uplink_bytes_per_second() const { return uplink_gbps * 1e9 / 8.0; }
  int WorkerNodes(int workers) const { return (workers + workers_per_node - 1) / workers_per_node; }
  // Racks the nodes of `workers` span (1 without racks).
  int Racks(int workers) const {
    return nodes_per_rack > 0 ? (WorkerNodes(workers) + nodes_per_rack - 1) / nodes_per_rack : 1;
  }
  double latency_seconds() const { return latency_us * 1e-6; }
  double flops_per_second() const { return gflops_per_worker * 1e9; }
  // What one worker computes of a layer of `type` per second, in products of
  // `rows` rows whose sums are `inner` long (0: not priced by it).
  double FlopsPerSecond(const std::string& type, double rows, double inner = 0.0) const;
};

// Parses a profile; errors name `source`:line:column and the field. Every
// error is InvalidArgument; *profile is part-filled over the defaults then.
Status ParseClusterProfile(const std::string& text, const std::string& source, ClusterProfile* profile);
// The same from a file: also ReadFile's errors, with *profile untouched.
Status LoadClusterProfile(const std::string& path, ClusterProfile* profile);
std::string ClusterProfileToYaml(const ClusterProfile& profile, const std::string& comment);

}  // namespace shoal
