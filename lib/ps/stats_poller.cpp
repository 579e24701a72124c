#include "ps/stats_poller.h"

#include <algorithm>
#include <chrono>

#include "comm/tls.h"

namespace shoal {

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

uint64_t Counter(const nlohmann::json& stats, const char* name) {
  const auto it = stats.find(name);
  return it != stats.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

// Per second between two readings of a counter; null when the server
// restarted in between (its counters began again) or no time passed.
nlohmann::json Rate(const nlohmann::json& before, const nlohmann::json& now, const char* name,
                    double seconds) {
  const uint64_t a = Counter(before, name), b = Counter(now, name);
  if (seconds <= 0 || b < a) return nullptr;
  return static_cast<double>(b - a) / seconds;
}

const ServerSample* Find(const JobSample& sample, int server) {
  for (const ServerSample& s : sample.servers)
    if (s.server == server) return &s;
  return nullptr;
}

}  // namespace

Status StatsPoller::Open(const Plan& plan, int timeout_ms) {
  plan_ = &plan;
  clients_.clear();
  for (const ServerPlan& server : plan.servers) {
    TlsIdentity tls = TlsIdentityFor(plan.job.cluster.tls_dir, "tool", 0);
    tls.server_name = ServerCertificateName(server.id);
    clients_.push_back(std::make_unique<RpcClient>());
    clients_.back()->set_label("dl-top");
    SHOAL_RETURN_IF_ERROR(clients_.back()->Dial(server.endpoint, timeout_ms, tls));
  }
  return Status::Ok();
}

JobSample StatsPoller::Poll() {
  JobSample sample;
  sample.seconds = Now();
  const MsgHeader ask{MsgType::kStats, plan_->hash_value(), 0, kToolSender};
  std::vector<Status> sent;
  for (auto& client : clients_) sent.push_back(client->Send(ask, {}));
  for (size_t i = 0; i < clients_.size(); ++i) {
    ServerSample s;
    s.server = plan_->servers[i].id;
    Reply reply;
    s.status = sent[i].ok() ? clients_[i]->Receive(&reply) : sent[i];
    if (s.status.ok()) {
      s.stats = nlohmann::json::parse(reply.view().text, nullptr, false);
      if (!s.stats.is_object())
        s.status =
            Status::Corruption("server " + std::to_string(s.server) + " answered stats that are not JSON");
    }
    sample.servers.push_back(std::move(s));
  }
  return sample;
}

nlohmann::json JobView(const Plan& plan, const JobSample& before, const JobSample& now) {
  const double seconds = before.servers.empty() ? 0 : now.seconds - before.seconds;
  nlohmann::json view = {{"plan", plan.hash},
                         {"consistency", plan.job.cluster.consistency},
                         {"interval_s", seconds > 0 ? nlohmann::json(seconds) : nlohmann::json()}};
  nlohmann::json servers = nlohmann::json::array();
  std::vector<uint64_t> steps(plan.workers.size(), 0);
  uint64_t version = 0;
  int reachable = 0;
  double updates = 0, in = 0, out = 0, steps_per_s = 0;
  nlohmann::json last_checkpoint;  // the oldest of the servers' newest
  bool every_checkpointed = true;
  for (const ServerSample& s : now.servers) {
    nlohmann::json row = {
        {"server", s.server}, {"endpoint", plan.servers[s.server].endpoint}, {"reachable", s.status.ok()}};
    if (!s.status.ok()) {
      row["error"] = s.status.ToString();
      servers.push_back(row);
      continue;
    }
    ++reachable;
    const nlohmann::json& st = s.stats;
    for (const char* field :
         {"version", "updates_received", "bytes_in", "bytes_out", "parked", "gets_waited", "ssp_waits",
          "max_staleness_served", "checkpoints", "last_checkpoint_step", "workers_done", "bad_requests"})
      row[field] = st.value(field, nlohmann::json());
    const ServerSample* earlier = Find(before, s.server);
    const bool rates = seconds > 0 && earlier && earlier->status.ok();
    struct {
      const char *rate, *counter;
      double* total;
    } const per_second[] = {{"steps_per_s", "version", &steps_per_s},
                            {"updates_per_s", "updates_received", &updates},
                            {"bytes_in_per_s", "bytes_in", &in},
                            {"bytes_out_per_s", "bytes_out", &out}};
    for (const auto& r : per_second) {
      row[r.rate] = rates ? Rate(earlier->stats, st, r.counter, seconds) : nlohmann::json();
      if (row[r.rate].is_number()) *r.total += row[r.rate].get<double>();
    }
    version = std::max(version, Counter(st, "version"));
    const nlohmann::json from = st.value("steps_from", nlohmann::json::array());
    for (size_t w = 0; w < steps.size() && w < from.size(); ++w)
      if (from[w].is_number_unsigned()) steps[w] = std::max(steps[w], from[w].get<uint64_t>());
    const nlohmann::json step = st.value("last_checkpoint_step", nlohmann::json());
    if (!step.is_number())
      every_checkpointed = false;
    else if (last_checkpoint.is_null() || step < last_checkpoint)
      last_checkpoint = step;
    servers.push_back(row);
  }
  view["servers"] = servers;
  view["reachable"] = reachable;
  view["version"] = version;
  // The servers' mean pace (under BSP their versions advance together).
  view["steps_per_s"] = steps_per_s / std::max(reachable, 1);
  view["updates_per_s"] = updates;
  view["bytes_in_per_s"] = in;
  view["bytes_out_per_s"] = out;
  view["last_checkpoint_step"] = every_checkpointed && reachable > 0 ? last_checkpoint : nlohmann::json();
  view["worker_steps"] = steps;
  if (reachable > 0 && !steps.empty()) {
    const auto slowest = std::min_element(steps.begin(), steps.end());
    view["slowest_worker"] = slowest - steps.begin();
    view["lag"] = *std::max_element(steps.begin(), steps.end()) - *slowest;
  } else {
    view["slowest_worker"] = nullptr;
    view["lag"] = nullptr;
  }
  return view;
}

}  // namespace shoal
