#include "ps/server_sync.h"

#include <algorithm>
#include <cstdio>
#include <memory>

#include "comm/rpc_client.h"
#include "comm/tls.h"
#include "plan/partition.h"

namespace shoal {

std::vector<int> SyncNeighbours(const Plan& plan, int server) {
  const ClusterConfig& c = plan.job.cluster;
  const int groups = c.nserver_groups, per_group = c.nservers_per_group;
  const int group = server / per_group, index = server % per_group;
  std::vector<int> neighbours;
  for (int g = 0; g < groups; ++g) {
    if (g == group) continue;
    // A ring syncs with the next group only (two groups: each other).
    if (c.sync_topology == "ring" && g != (group + 1) % groups) continue;
    neighbours.push_back(g * per_group + index);
  }
  return neighbours;
}

ServerSync::ServerSync(const Plan& plan, int server, Snapshot snapshot)
    : plan_(plan), server_(server), snapshot_(std::move(snapshot)), neighbours_(SyncNeighbours(plan, server)) {}

void ServerSync::Start() {
  if (!neighbours_.empty()) thread_ = std::thread([this] { Loop(); });
}

void ServerSync::Trigger() {
  std::lock_guard<std::mutex> lock(mu_);
  pending_ = true;
  due_.notify_all();
}

void ServerSync::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    due_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void ServerSync::Loop() {
  // A neighbour that has finished must not hold this server's exit for long.
  const int timeout_ms = std::min(plan_.job.cluster.timeout_ms, 2000);
  const size_t keys_per_group = plan_.slices.size() / plan_.job.cluster.nserver_groups;
  const int group = ServerGroupOfServer(plan_, server_);
  std::vector<std::unique_ptr<RpcClient>> clients;
  for (int n : neighbours_) {
    clients.push_back(std::make_unique<RpcClient>());
    TlsIdentity tls = TlsIdentityFor(plan_.job.cluster.tls_dir, "server", server_);
    tls.server_name = ServerCertificateName(n);
    Status s = clients.back()->Dial(plan_.servers[n].endpoint, timeout_ms, tls);
    if (!s.ok()) std::fprintf(stderr, "dl-server: server %d cannot reach server %d: %s\n", server_, n, s.ToString().c_str());
  }
  std::vector<std::pair<uint32_t, std::vector<float>>> values;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      due_.wait(lock, [&] { return pending_ || stopping_; });
      if (stopping_) return;
      pending_ = false;
    }
    snapshot_(&values);
    for (size_t i = 0; i < neighbours_.size(); ++i) {
      // The neighbour's copy of a slice has the same place in its group's keys.
      const long shift = (static_cast<long>(ServerGroupOfServer(plan_, neighbours_[i])) - group) *
                         static_cast<long>(keys_per_group);
      std::vector<EntryRef> entries;
      for (const auto& [key, v] : values)
        entries.push_back({static_cast<uint32_t>(key + shift), v.data(), static_cast<uint32_t>(v.size())});
      MsgHeader h{MsgType::kSync, plan_.hash_value(), 0, kServerSenderBase + static_cast<uint32_t>(server_)};
      Reply reply;
      Status s = clients[i]->Call(h, entries, &reply);
      if (s.ok()) {
        ++sent_;
      } else {
        ++failed_;
        std::fprintf(stderr, "dl-server: server %d: sync with server %d: %s\n", server_, neighbours_[i],
                     s.ToString().c_str());
      }
    }
  }
}

}  // namespace shoal
