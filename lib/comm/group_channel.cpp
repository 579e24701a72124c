#include "comm/group_channel.h"

#include <nng/protocol/pipeline0/pull.h>
#include <nng/protocol/pipeline0/push.h>

#include <chrono>

#include "comm/message.h"
#include "comm/socket_close.h"
#include "comm/tls.h"

namespace shoal {
namespace {

// Sends of a whole step's blocks to one peer are queued, never waited for.
constexpr int kQueuedMessages = 4096;

Status NngError(const std::string& what, int rv) { return Status::IOError(what + ": " + nng_strerror(rv)); }

}  // namespace

GroupChannel::~GroupChannel() {
  for (auto& [key, msg] : early_) nng_msg_free(msg);
  for (size_t r = 0; r < push_.size(); ++r)
    if (push_open_[r]) CloseSocket(push_[r], "the channel to " + Peer(r));
  if (pull_open_) CloseSocket(pull_, "the channel from the group");
}

std::string GroupChannel::Peer(int rank) const {
  return "worker " + std::to_string(peers_.first_worker + rank) + " at '" + peers_.endpoints[rank] + "'";
}

void GroupChannel::OnPipeRemoved(nng_pipe, nng_pipe_ev, void* closed) {
  ++*static_cast<std::atomic<uint64_t>*>(closed);
}

std::string GroupChannel::Heard(int rank) const {
  const FromPeer& from = from_[rank];
  std::string heard = "; from it: " + std::to_string(from.blocks) + " blocks";
  if (from.blocks > 0)
    heard += ", the last tag " + std::to_string(from.tag) + " of step " + std::to_string(from.step);
  size_t held = 0;
  for (const auto& [key, msg] : early_)
    if (std::get<0>(key) == static_cast<uint32_t>(peers_.first_worker + rank)) ++held;
  if (held > 0) heard += ", " + std::to_string(held) + " held that came before they were asked for";
  const uint64_t in = closed_in_, out = closed_out_;
  if (in + out > 0)
    heard += "; connections ended (or refused): " + std::to_string(in) + " into this worker, " +
             std::to_string(out) + " out of it, with any peer (a block in flight on one may be lost)";
  return heard;
}

Status GroupChannel::Open(const GroupPeers& peers) {
  peers_ = peers;
  const int worker = this->worker();
  const int m = static_cast<int>(peers.endpoints.size());
  if (peers.rank < 0 || peers.rank >= m)
    return Status::InvalidArgument("rank " + std::to_string(peers.rank) + " is not in a group of " +
                                   std::to_string(m));
  const std::string& tls_dir = peers.tls_dir;
  const std::string& mine = peers.endpoints[peers.rank];

  from_.assign(m, FromPeer{});
  int rv = nng_pull0_open(&pull_);
  if (rv != 0) return NngError("cannot open a socket", rv);
  pull_open_ = true;
  nng_pipe_notify(pull_, NNG_PIPE_EV_REM_POST, OnPipeRemoved, &closed_in_);
  // A block is at most the largest a peer may send: a bigger frame is
  // dropped by NNG before it is read whole, whatever its header claims.
  nng_socket_set_size(pull_, NNG_OPT_RECVMAXSZ,
                      kHeaderBytes + kEntryHeaderBytes + 4 * peers.max_block_floats);
  nng_socket_set_int(pull_, NNG_OPT_RECVBUF, kQueuedMessages);
  nng_listener listener;
  rv = nng_listener_create(&listener, pull_, mine.c_str());
  if (rv != 0)
    return Status::InvalidArgument("worker " + std::to_string(worker) + ": cannot listen on '" + mine +
                                   "': " + nng_strerror(rv));
  nng_tls_config* config = nullptr;
  SHOAL_RETURN_IF_ERROR(TlsConfigFor(mine, TlsIdentityFor(tls_dir, "worker", worker), true, &config));
  if (config) {
    nng_listener_set_ptr(listener, NNG_OPT_TLS_CONFIG, config);
    nng_tls_config_free(config);
  }
  rv = nng_listener_start(listener, 0);
  if (rv != 0)
    return Status::Unavailable("worker " + std::to_string(worker) + ": cannot listen on '" + mine +
                               "': " + nng_strerror(rv));

  push_.assign(m, nng_socket{});
  push_open_.assign(m, false);
  for (int r = 0; r < m; ++r) {
    if (r == peers.rank) continue;
    const std::string& peer = peers.endpoints[r];
    rv = nng_push0_open(&push_[r]);
    if (rv != 0) return NngError("cannot open a socket", rv);
    push_open_[r] = true;
    nng_pipe_notify(push_[r], NNG_PIPE_EV_REM_POST, OnPipeRemoved, &closed_out_);
    nng_socket_set_int(push_[r], NNG_OPT_SENDBUF, kQueuedMessages);
    nng_socket_set_ms(push_[r], NNG_OPT_SENDTIMEO, peers.timeout_ms);
    nng_socket_set_ms(push_[r], NNG_OPT_RECONNMINT, 20);
    nng_socket_set_ms(push_[r], NNG_OPT_RECONNMAXT, 500);
    nng_dialer dialer;
    rv = nng_dialer_create(&dialer, push_[r], peer.c_str());
    if (rv != 0) return Status::InvalidArgument("cannot dial " + Peer(r) + ": " + nng_strerror(rv));
    TlsIdentity identity = TlsIdentityFor(tls_dir, "worker", worker);
    identity.server_name = "worker-" + std::to_string(peers.first_worker + r);
    SHOAL_RETURN_IF_ERROR(TlsConfigFor(peer, identity, false, &config));
    if (config) {
      nng_dialer_set_ptr(dialer, NNG_OPT_TLS_CONFIG, config);
      nng_tls_config_free(config);
    }
    // Peers start in any order: the dialer keeps trying in the background.
    rv = nng_dialer_start(dialer, NNG_FLAG_NONBLOCK);
    if (rv != 0) return NngError("cannot dial " + Peer(r), rv);
  }
  return Status::Ok();
}

Status GroupChannel::Send(int rank, uint32_t tag, uint64_t step, const float* data, size_t count) {
  MsgHeader h{MsgType::kFeature, peers_.plan_hash, step, static_cast<uint32_t>(worker())};
  std::vector<EntryRef> entries{{tag, data, static_cast<uint32_t>(count)}};
  nng_msg* msg = nullptr;
  const size_t size = EncodedSize(entries, "");
  int rv = nng_msg_alloc(&msg, size);
  if (rv != 0) return NngError("cannot allocate a message", rv);
  Encode(h, entries, "", static_cast<unsigned char*>(nng_msg_body(msg)));
  rv = nng_sendmsg(push_.at(rank), msg, 0);
  if (rv != 0) {
    nng_msg_free(msg);
    return Status::Unavailable("worker " + std::to_string(worker()) + " cannot send step " +
                               std::to_string(step) + "'s block to " + Peer(rank) + ": " + nng_strerror(rv));
  }
  return Status::Ok();
}

Status GroupChannel::Receive(int rank, uint32_t tag, uint64_t step, float* data, size_t count,
                             const std::string& what) {
  const uint32_t peer = static_cast<uint32_t>(peers_.first_worker + rank);
  const Key wanted{peer, tag, step};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(peers_.timeout_ms);
  nng_msg* msg = nullptr;
  while (!msg) {
    auto it = early_.find(wanted);
    if (it != early_.end()) {
      msg = it->second;
      early_.erase(it);
      break;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    nng_msg* got = nullptr;
    int rv = left.count() > 0
                 ? (nng_socket_set_ms(pull_, NNG_OPT_RECVTIMEO, left.count()), nng_recvmsg(pull_, &got, 0))
                 : NNG_ETIMEDOUT;
    if (rv == NNG_ETIMEDOUT)
      return Status::Timeout(
          "worker " + std::to_string(worker()) + " waited " + std::to_string(peers_.timeout_ms) + " ms for " +
          what + " (step " + std::to_string(step) + ") from " + Peer(rank) + " (is it running?)" +
          Heard(rank) +
          (refused_ ? "; it refused " + std::to_string(refused_) + " bad messages, the last: " + last_refusal_
                    : ""));
    if (rv != 0) return NngError("worker " + std::to_string(worker()) + " cannot receive", rv);
    MessageView view;
    Status s = Decode(static_cast<const unsigned char*>(nng_msg_body(got)), nng_msg_len(got), &view);
    if (s.ok() && (view.header.type != MsgType::kFeature || view.header.plan_hash != peers_.plan_hash ||
                   view.entries.size() != 1))
      s = Status::InvalidArgument("not a feature block of this plan");
    const uint32_t first = static_cast<uint32_t>(peers_.first_worker);
    if (s.ok() && (view.header.sender < first || view.header.sender >= first + peers_.endpoints.size() ||
                   view.header.sender == static_cast<uint32_t>(worker())))
      s = Status::InvalidArgument("a block from sender " + std::to_string(view.header.sender) +
                                  ", not a peer of this group");
    if (!s.ok()) {  // a bad peer is refused, never let stop the group
      nng_msg_free(got);
      ++refused_;
      last_refusal_ = s.message();
      continue;
    }
    Key key{view.header.sender, view.entries[0].key, view.header.step};
    FromPeer& from = from_[view.header.sender - first];
    from = {from.blocks + 1, view.entries[0].key, view.header.step};
    if (key == wanted) {
      msg = got;
    } else {
      // A peer runs at most a step ahead: more blocks than that are a fault,
      // not something to hold on to without end.
      if (early_.size() >= kMaxEarlyBlocks && !early_.count(key)) {
        nng_msg_free(got);
        return Status::InvalidArgument(
            "worker " + std::to_string(worker()) + " holds " + std::to_string(kMaxEarlyBlocks) +
            " blocks that arrived before they were " + "asked for; the last from worker " +
            std::to_string(std::get<0>(key)) + " (step " + std::to_string(std::get<2>(key)) + ")");
      }
      auto [slot, fresh] = early_.emplace(key, got);
      if (!fresh) {  // a repeat of one not yet taken: keep the newer
        nng_msg_free(slot->second);
        slot->second = got;
      }
    }
  }
  MessageView view;
  Status s = Decode(static_cast<const unsigned char*>(nng_msg_body(msg)), nng_msg_len(msg), &view);
  if (s.ok() && view.entries[0].count != count)
    s = Status::InvalidArgument("worker " + std::to_string(peer) + " sent " +
                                std::to_string(view.entries[0].count) + " floats of " + what + " (step " +
                                std::to_string(step) + "), " + std::to_string(count) + " were expected");
  if (s.ok()) CopyValues(view.entries[0], data);
  nng_msg_free(msg);
  return s;
}

}  // namespace shoal
