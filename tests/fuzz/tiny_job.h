// The fuzzers' small job: two workers and two layers with parameters, fc
// (keys 0: 12 floats, 1: 3) and fc2 (2: 6, 3: 2), so plans, checkpoints and
// messages stay small enough for libFuzzer to grow.
#pragma once

#include <string>

namespace shoal {

// `consistency` is the YAML of cluster.consistency and its options ("ssp, staleness: 1").
inline std::string TinyJob(int servers, const std::string& consistency = "bsp") {
  return "model:\n"
         "  layers:\n"
         "    - {name: data, type: data, shape: [1, 2, 2]}\n"
         "    - {name: fc, type: fully_connected, srclayers: data, num_output: 3}\n"
         "    - {name: fc2, type: fully_connected, srclayers: fc, num_output: 2}\n"
         "    - {name: loss, type: softmax_loss, srclayers: [fc2, data]}\n"
         "train: {steps: 6, updater: momentum, learning_rate: 0.1, momentum: 0.9, seed: 3}\n"
         "cluster: {nworkers_per_group: 2, nservers_per_group: " +
         std::to_string(servers) + ", timeout_ms: 2000, consistency: " + consistency + "}\n";
}

}  // namespace shoal
