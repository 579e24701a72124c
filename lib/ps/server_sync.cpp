#include "ps/server_sync.h"

#include <algorithm>
#include <memory>

#include "comm/rpc_client.h"
#include "comm/tls.h"
#include "core/log.h"

namespace shoal {

ServerSync::ServerSync(const ServerConfig& config, Snapshot snapshot)
    : config_(config), snapshot_(std::move(snapshot)) {}

void ServerSync::Start() {
  if (!config_.sync_neighbours.empty()) thread_ = std::thread([this] { Loop(); });
}

void ServerSync::Trigger() {
  MutexLock lock(&mu_);
  pending_ = true;
  due_.SignalAll();
}

void ServerSync::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    due_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

void ServerSync::Loop() {
  // A neighbour that has finished must not hold this server's exit for long.
  const int timeout_ms = std::min(config_.timeout_ms, 2000);
  const std::vector<int>& neighbours = config_.sync_neighbours;
  const int per_group = config_.servers_per_group;
  std::vector<std::unique_ptr<RpcClient>> clients;
  for (size_t i = 0; i < neighbours.size(); ++i) {
    clients.push_back(std::make_unique<RpcClient>());
    TlsIdentity tls = config_.tls;
    tls.server_name = ServerCertificateName(neighbours[i]);
    Status s = clients.back()->Dial(config_.sync_endpoints[i], timeout_ms, tls);
    if (!s.ok())
      Log("server " + std::to_string(config_.id) + " cannot reach server " + std::to_string(neighbours[i]) +
          ": " + s.ToString());
  }
  std::vector<std::pair<uint32_t, std::vector<float>>> values;
  while (true) {
    {
      MutexLock lock(&mu_);
      while (!pending_ && !stopping_) due_.Wait();
      if (stopping_) return;
      pending_ = false;
    }
    snapshot_(&values);
    for (size_t i = 0; i < neighbours.size(); ++i) {
      // The neighbour's copy of a slice has the same place in its group's keys.
      const long shift = (static_cast<long>(neighbours[i] / per_group) - config_.group) *
                         static_cast<long>(config_.keys_per_group);
      std::vector<EntryRef> entries;
      for (const auto& [key, v] : values)
        entries.push_back({static_cast<uint32_t>(key + shift), v.data(), static_cast<uint32_t>(v.size())});
      MsgHeader h{MsgType::kSync, config_.plan_hash_value, 0,
                  kServerSenderBase + static_cast<uint32_t>(config_.id)};
      Reply reply;
      Status s = clients[i]->Call(h, entries, &reply);
      if (s.ok()) {
        ++sent_;
      } else {
        ++failed_;
        Log("server " + std::to_string(config_.id) + ": sync with server " + std::to_string(neighbours[i]) +
            ": " + s.ToString());
      }
    }
  }
}

}  // namespace shoal
