#include "comm/group_channel.h"

#include <nng/protocol/pipeline0/pull.h>
#include <nng/protocol/pipeline0/push.h>

#include <chrono>

#include "comm/message.h"
#include "comm/tls.h"
#include "plan/partition.h"

namespace shoal {
namespace {

// Sends of a whole step's blocks to one peer are queued, never waited for.
constexpr int kQueuedMessages = 4096;

Status NngError(const std::string& what, int rv) { return Status::IOError(what + ": " + nng_strerror(rv)); }

}  // namespace

GroupChannel::~GroupChannel() {
  for (auto& [key, msg] : early_) nng_msg_free(msg);
  for (size_t r = 0; r < push_.size(); ++r)
    if (push_open_[r]) nng_close(push_[r]);
  if (pull_open_) nng_close(pull_);
}

Status GroupChannel::Open(const Plan& plan, int worker, int timeout_ms) {
  plan_ = &plan;
  worker_ = worker;
  rank_ = plan.workers.at(worker).rank;
  first_ = worker - rank_;
  timeout_ms_ = timeout_ms;
  plan_hash_ = plan.hash_value();
  const int m = GroupSize(plan);
  const std::string& tls_dir = plan.job.cluster.tls_dir;
  const std::string& mine = plan.workers[worker].endpoint;

  int rv = nng_pull0_open(&pull_);
  if (rv != 0) return NngError("cannot open a socket", rv);
  pull_open_ = true;
  nng_socket_set_size(pull_, NNG_OPT_RECVMAXSZ, 0);
  nng_socket_set_int(pull_, NNG_OPT_RECVBUF, kQueuedMessages);
  nng_listener listener;
  rv = nng_listener_create(&listener, pull_, mine.c_str());
  if (rv != 0) return Status::InvalidArgument("worker " + std::to_string(worker) + ": cannot listen on '" + mine +
                                              "': " + nng_strerror(rv));
  nng_tls_config* config = nullptr;
  SHOAL_RETURN_IF_ERROR(TlsConfigFor(mine, TlsIdentityFor(tls_dir, "worker", worker), true, &config));
  if (config) {
    nng_listener_set_ptr(listener, NNG_OPT_TLS_CONFIG, config);
    nng_tls_config_free(config);
  }
  rv = nng_listener_start(listener, 0);
  if (rv != 0) return Status::Unavailable("worker " + std::to_string(worker) + ": cannot listen on '" + mine +
                                          "': " + nng_strerror(rv));

  push_.assign(m, nng_socket{});
  push_open_.assign(m, false);
  for (int r = 0; r < m; ++r) {
    if (r == rank_) continue;
    const std::string& peer = plan.workers[first_ + r].endpoint;
    rv = nng_push0_open(&push_[r]);
    if (rv != 0) return NngError("cannot open a socket", rv);
    push_open_[r] = true;
    nng_socket_set_int(push_[r], NNG_OPT_SENDBUF, kQueuedMessages);
    nng_socket_set_ms(push_[r], NNG_OPT_SENDTIMEO, timeout_ms);
    nng_socket_set_ms(push_[r], NNG_OPT_RECONNMINT, 20);
    nng_socket_set_ms(push_[r], NNG_OPT_RECONNMAXT, 500);
    nng_dialer dialer;
    rv = nng_dialer_create(&dialer, push_[r], peer.c_str());
    if (rv != 0) return Status::InvalidArgument("cannot dial worker " + std::to_string(first_ + r) + " at '" + peer +
                                                "': " + nng_strerror(rv));
    TlsIdentity identity = TlsIdentityFor(tls_dir, "worker", worker);
    identity.server_name = "worker-" + std::to_string(first_ + r);
    SHOAL_RETURN_IF_ERROR(TlsConfigFor(peer, identity, false, &config));
    if (config) {
      nng_dialer_set_ptr(dialer, NNG_OPT_TLS_CONFIG, config);
      nng_tls_config_free(config);
    }
    // Peers start in any order: the dialer keeps trying in the background.
    rv = nng_dialer_start(dialer, NNG_FLAG_NONBLOCK);
    if (rv != 0) return NngError("cannot dial worker " + std::to_string(first_ + r) + " at '" + peer + "'", rv);
  }
  return Status::Ok();
}

Status GroupChannel::Send(int rank, uint32_t tag, uint64_t step, const float* data, size_t count) {
  MsgHeader h{MsgType::kFeature, plan_hash_, step, static_cast<uint32_t>(worker_)};
  std::vector<EntryRef> entries{{tag, data, static_cast<uint32_t>(count)}};
  nng_msg* msg = nullptr;
  const size_t size = EncodedSize(entries, "");
  int rv = nng_msg_alloc(&msg, size);
  if (rv != 0) return NngError("cannot allocate a message", rv);
  Encode(h, entries, "", static_cast<unsigned char*>(nng_msg_body(msg)));
  rv = nng_sendmsg(push_.at(rank), msg, 0);
  if (rv != 0) {
    nng_msg_free(msg);
    const int peer = first_ + rank;
    return Status::Unavailable("worker " + std::to_string(worker_) + " cannot send step " + std::to_string(step) +
                               "'s block to worker " + std::to_string(peer) + " at '" +
                               plan_->workers[peer].endpoint + "': " + nng_strerror(rv));
  }
  return Status::Ok();
}

Status GroupChannel::Receive(int rank, uint32_t tag, uint64_t step, float* data, size_t count,
                             const std::string& what) {
  const uint32_t peer = static_cast<uint32_t>(first_ + rank);
  const Key wanted{peer, tag, step};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
  nng_msg* msg = nullptr;
  while (!msg) {
    auto it = early_.find(wanted);
    if (it != early_.end()) {
      msg = it->second;
      early_.erase(it);
      break;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    nng_msg* got = nullptr;
    int rv = left.count() > 0 ? (nng_socket_set_ms(pull_, NNG_OPT_RECVTIMEO, left.count()), nng_recvmsg(pull_, &got, 0))
                              : NNG_ETIMEDOUT;
    if (rv == NNG_ETIMEDOUT)
      return Status::Timeout("worker " + std::to_string(worker_) + " waited " + std::to_string(timeout_ms_) +
                             " ms for " + what + " (step " + std::to_string(step) + ") from worker " +
                             std::to_string(peer) + " at '" + plan_->workers[peer].endpoint + "' (is it running?)");
    if (rv != 0) return NngError("worker " + std::to_string(worker_) + " cannot receive", rv);
    MessageView view;
    Status s = Decode(static_cast<const unsigned char*>(nng_msg_body(got)), nng_msg_len(got), &view);
    if (s.ok() && (view.header.type != MsgType::kFeature || view.header.plan_hash != plan_hash_ ||
                   view.entries.size() != 1))
      s = Status::InvalidArgument("not a feature block of this plan");
    if (!s.ok()) {
      nng_msg_free(got);
      return s.Within("a message from its group");
    }
    Key key{view.header.sender, view.entries[0].key, view.header.step};
    if (key == wanted) {
      msg = got;
    } else {
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
    s = Status::InvalidArgument("worker " + std::to_string(peer) + " sent " + std::to_string(view.entries[0].count) +
                                " floats of " + what + " (step " + std::to_string(step) + "), " +
                                std::to_string(count) + " were expected");
  if (s.ok()) CopyValues(view.entries[0], data);
  nng_msg_free(msg);
  return s;
}

}  // namespace shoal
