// Distributed Hogwild (SINGA journal paper §5.2): several server groups, each
// a whole copy of the table updated by its own worker groups, bring their
// copies together every `sync_freq` updates. Server i of a group sends its
// slices to server i of each neighbouring group (all-to-all, or a ring),
// which moves its copy halfway toward them. The sending runs on a thread of
// its own, so a slow or finished neighbour never holds up the updates; a
// neighbour that does not answer is counted and passed over.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "comm/message.h"
#include "core/mutex.h"
#include "ps/server_config.h"

namespace shoal {

// Sends this server's slices to its neighbours in other server groups whenever a sync is due.
class ServerSync {
 public:
  // Fills `values` with this server's slices: (key, values), in key order.
  using Snapshot = std::function<void(std::vector<std::pair<uint32_t, std::vector<float>>>* values)>;

  // `config` (which must outlive this) names the neighbours (sync_neighbours).
  ServerSync(const ServerConfig& config, Snapshot snapshot);
  ~ServerSync() { Stop(); }
  void Start();
  // A sync is due (called under the server's lock: it only sets a flag).
  void Trigger();
  void Stop();

  uint64_t sent() const { return sent_; }
  uint64_t failed() const { return failed_; }

 private:
  void Loop();

  const ServerConfig& config_;
  Snapshot snapshot_;
  Mutex mu_;
  CondVar due_{&mu_};
  bool pending_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
  std::atomic<uint64_t> sent_{0}, failed_{0};
};

// The sender id a server's sync carries (workers are 0..N-1).
constexpr uint32_t kServerSenderBase = 0x80000000u;

}  // namespace shoal
