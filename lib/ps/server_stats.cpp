#include "ps/server_stats.h"

namespace shoal {

nlohmann::json StatsToJson(const ServerStats& s) {
  return {{"version", s.version},
          {"updates_received", s.updates_received},
          {"updates_applied", s.updates_applied},
          {"updates_repeated", s.updates_repeated},
          {"updates_from", s.updates_from},
          {"steps_from", s.steps_from},
          {"gets", s.gets},
          {"gets_waited", s.gets_waited},
          {"parked", s.parked},
          {"ssp_waits", s.ssp_waits},
          {"max_staleness_served", s.max_staleness_served},
          {"bad_requests", s.bad_requests},
          {"reads_timed_out", s.reads_timed_out},
          {"reads_busy", s.reads_busy},
          {"checkpoints", s.checkpoints},
          {"last_checkpoint_step",
           s.last_checkpoint_step < 0 ? nlohmann::json() : nlohmann::json(s.last_checkpoint_step)},
          {"checkpoint_failures", s.checkpoint_failures},
          {"last_checkpoint_failure",
           s.last_checkpoint_failure.empty() ? nlohmann::json() : nlohmann::json(s.last_checkpoint_failure)},
          {"bytes_in", s.bytes_in},
          {"bytes_out", s.bytes_out},
          {"handle_s", s.handle_s},
          {"encode_s", s.encode_s},
          {"decode_s", s.decode_s},
          {"syncs_received", s.syncs_received},
          {"workers_done", s.workers_done}};
}

}  // namespace shoal
