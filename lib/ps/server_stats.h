// What a parameter server counts: answered to a stats request and printed
// by dl-server when it exits, from this one definition.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

namespace shoal {

struct ServerStats {
  uint64_t version = 0;
  uint64_t updates_received = 0;  // requests carrying something new (one per step, or per lane with overlap)
  uint64_t updates_repeated = 0;  // from rejoined workers, dropped
  uint64_t updates_applied = 0;
  // Per worker: its steps (easgd: exchanges) this server took in since it
  // started, a step counted once its every layer here is in (with
  // train.overlap they come layer by layer), repeats not counted. A worker's
  // updates_sent meets its own; under async with every worker holding every
  // layer here (data parallel) each is applied alone, so they add up to
  // updates_applied.
  std::vector<uint64_t> updates_from;
  // Per worker: the step after the last one all of whose layers here the
  // table holds (easgd: after its last exchange), checkpoints included: a
  // server resumed from a checkpoint starts from its clocks, so this is the
  // checkpoint's plus what updates_from has counted since.
  std::vector<uint64_t> steps_from;
  uint64_t gets = 0;
  uint64_t gets_waited = 0;
  uint64_t parked = 0;  // reads waiting now for their version (BSP) or the slowest worker (SSP)
  // ssp: reads parked until the slowest worker caught up to within the slack.
  uint64_t ssp_waits = 0;
  // ssp: the most, over every read answered, of its clock − the slowest
  // worker's clock when it was answered: the steps of the slowest worker the
  // reader had to go without. Never above cluster.staleness.
  uint64_t max_staleness_served = 0;
  uint64_t bad_requests = 0;
  uint64_t reads_timed_out =
      0;  // parked past cluster.timeout_ms: answered timed-out, naming what they waited for
  // Parked past cluster.timeout_ms while another worker said it was busy
  // (evaluating): answered busy, and asked again.
  uint64_t reads_busy = 0;
  uint64_t checkpoints = 0;
  int64_t last_checkpoint_step = -1;     // -1: none written yet
  uint64_t checkpoint_failures = 0;      // writes that failed, each try counted
  std::string last_checkpoint_failure;   // the newest one's reason; empty: none
  uint64_t bytes_in = 0, bytes_out = 0;  // every request and reply, headers included
  // Seconds busy: handling requests (gradients summed, updates applied,
  // replies encoded; under the server's lock), and of that, encoding the
  // replies; decoding the requests (before the lock).
  double handle_s = 0, encode_s = 0, decode_s = 0;
  uint64_t syncs_received = 0;  // several server groups: neighbours' copies averaged in
  int workers_done = 0;
};

nlohmann::json StatsToJson(const ServerStats& stats);

}  // namespace shoal
