// A running job seen from outside, as dl-top shows it: every server of a
// plan asked for its stats at once, and two such polls turned into rates
// (updates and bytes per second) and the job's shape (each worker's step,
// the slowest worker and how far behind it is, the last checkpoint).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "comm/rpc_client.h"
#include "core/status.h"
#include "plan/plan.h"

namespace shoal {

// One server's answer to one poll: its stats, or why there are none.
struct ServerSample {
  int server = 0;
  Status status;
  nlohmann::json stats;  // as the server sent it (ServerStats' JSON)
};

struct JobSample {
  double seconds = 0;  // when it was taken, on a steady clock
  std::vector<ServerSample> servers;
};

// Asks every server of one plan for its stats at once.
class StatsPoller {
 public:
  // Dials every server of `plan` (in the background: they may come up
  // later). With TLS the poller shows the job's `tool-0` certificate
  // (scripts/make-certs.sh issues it). Returns the first Dial error; the
  // poller then holds clients only up to that server.
  Status Open(const Plan& plan, int timeout_ms);
  // Asks every server at once; each answer, or the reason it has none,
  // within the timeout. A server whose stats are not a JSON object gets Corruption.
  JobSample Poll();

 private:
  const Plan* plan_ = nullptr;
  std::vector<std::unique_ptr<RpcClient>> clients_;
};

// The view of `now` (rates over the time since `before`; `before` may be
// empty, and then no rates): the JSON dl-top prints with --json.
nlohmann::json JobView(const Plan& plan, const JobSample& before, const JobSample& now);

}  // namespace shoal
