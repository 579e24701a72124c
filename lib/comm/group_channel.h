// Features and their gradients between the workers of one group: what
// SINGA's bridge layers carry. Each worker listens (pull) on its endpoint in
// the plan and pushes to every peer's. A send is queued and returns at once,
// so the transfer goes on while the worker computes; a receive waits at most
// the timeout and says which peer and which block it waited for.
#pragma once

#include <nng/nng.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/status.h"

namespace shoal {

// Who a worker's group is, as the transport needs it.
struct GroupPeers {
  std::vector<std::string> endpoints;  // per rank of the group: where it listens
  int first_worker = 0;                // the global worker id of rank 0
  int rank = 0;                        // this worker's
  uint64_t plan_hash = 0;              // every block carries it; blocks of another plan are refused
  int timeout_ms = 0;                  // every receive gives up after this long
  std::string tls_dir;                 // certificates (lib/comm/tls.h); empty: none
  size_t max_block_floats = 0;         // the largest block a peer may send; larger messages are dropped
};

class GroupChannel {
 public:
  GroupChannel() = default;
  GroupChannel(const GroupChannel&) = delete;
  GroupChannel& operator=(const GroupChannel&) = delete;
  ~GroupChannel();

  // Listens on this rank's endpoint and dials the group's other ranks.
  Status Open(const GroupPeers& peers);

  // `tag` names the block (which edge, which direction) within step `step`.
  Status Send(int rank, uint32_t tag, uint64_t step, const float* data, size_t count);
  // Fills `data` with exactly `count` floats from rank `rank`; `what` says
  // what they are in an error ("features of layer 'fc2'").
  Status Receive(int rank, uint32_t tag, uint64_t step, float* data, size_t count, const std::string& what);

  int rank() const { return peers_.rank; }
  size_t group_size() const { return push_.size(); }
  // Messages refused: undecodable, of another plan, or not from a peer.
  uint64_t refused() const { return refused_; }
  // Blocks held that arrived before they were asked for (at most kMaxEarlyBlocks).
  size_t early_blocks() const { return early_.size(); }
  static constexpr size_t kMaxEarlyBlocks = 4096;

 private:
  using Key = std::tuple<uint32_t, uint32_t, uint64_t>;  // sender, tag, step
  int worker() const { return peers_.first_worker + peers_.rank; }
  std::string Peer(int rank) const;
  // What a receive that gave up on `rank` knows of it: what came from it
  // last, what it holds early, and whether a connection of the group ever
  // ended (NNG drops a message in flight on a connection that closes).
  std::string Heard(int rank) const;
  static void OnPipeRemoved(nng_pipe, nng_pipe_ev, void* closed);

  // Per rank: blocks taken from it, and the last one's (tag, step).
  struct FromPeer {
    uint64_t blocks = 0;
    uint32_t tag = 0;
    uint64_t step = 0;
  };

  GroupPeers peers_;
  nng_socket pull_{};
  bool pull_open_ = false;
  std::vector<nng_socket> push_;  // per rank of the group; its own is unused
  std::vector<bool> push_open_;
  std::map<Key, nng_msg*> early_;  // arrived before they were asked for
  std::vector<FromPeer> from_;
  // Connections ended (NNG's pipe removals): into this rank's listener, and out of its push sockets.
  std::atomic<uint64_t> closed_in_{0};
  std::atomic<uint64_t> closed_out_{0};
  uint64_t refused_ = 0;  // messages that were not a block of this group's
  std::string last_refusal_;
};

}  // namespace shoal
