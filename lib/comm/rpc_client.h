// A request/reply client over NNG (req0) to one peer. Every wait is bounded
// by the timeout, and a timeout names the peer and what was asked; a long
// wait says so in the log every few seconds, so a worker whose server is not
// there is never silent.
#pragma once

#include <nng/nng.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "comm/message.h"
#include "comm/pipe_set.h"
#include "comm/socket_close.h"
#include "comm/spare_message.h"
#include "comm/tls.h"
#include "core/mutex.h"
#include "core/status.h"

namespace shoal {

// A reply, decoded; views point into the message it owns.
class Reply {
 public:
  Reply() = default;
  ~Reply() { Reset(); }
  Reply(const Reply&) = delete;
  Reply& operator=(const Reply&) = delete;
  void Reset();
  const MessageView& view() const { return view_; }

 private:
  friend class RpcClient;
  nng_msg* msg_ = nullptr;
  MessageView view_;
};

class RpcClient {
 public:
  RpcClient() = default;
  ~RpcClient();
  RpcClient(const RpcClient&) = delete;
  RpcClient& operator=(const RpcClient&) = delete;

  // Connects in the background: the server may come up after us. A
  // tls+tcp:// endpoint needs `tls` (this process's identity).
  Status Dial(const std::string& endpoint, int timeout_ms, const TlsIdentity& tls = {});
  // Another client of the same server over this one's connection, with a
  // request of its own in flight beside this one's (each client is an NNG req
  // context): a worker keeps one per layer, so that the layers' updates do
  // not wait for each other. The connection closes with the last client on it.
  Status Share(std::unique_ptr<RpcClient>* other) const;
  // Send and Receive are split so that requests to several servers can be
  // in flight at once, and computation can go on meanwhile: Send encodes the
  // request and returns while it leaves in the background. One request per
  // client at a time.
  Status Send(const MsgHeader& header, const std::vector<EntryRef>& entries, const std::string& text = "");
  // Waits for the last Send to leave, then for its reply, each within the
  // timeout (the reply kServerAnswersFirst longer); a kError reply becomes an
  // error, a kTimedOut one a timeout, a kStopping one unavailable.
  Status Receive(Reply* reply);
  // Waits for the last Send to leave (for tests that must know it has).
  Status WaitSent();
  // Takes a reply that is no longer read: its message carries the next request.
  void Recycle(Reply* reply) {
    spare_.Keep(std::exchange(reply->msg_, nullptr));
    reply->Reset();
  }
  Status Call(const MsgHeader& header, const std::vector<EntryRef>& entries, Reply* reply) {
    SHOAL_RETURN_IF_ERROR(Send(header, entries));
    return Receive(reply);
  }
  const std::string& endpoint() const { return endpoint_; }
  // Who is asking, for the log lines of a long wait ("worker 1").
  void set_label(std::string label) { label_ = std::move(label); }
  // How often a long wait is logged.
  static constexpr std::chrono::seconds kWaitLogEvery{5};
  // A server whose connection has been down this long has gone: a request
  // waiting on it fails then, not at the end of its timeout.
  static constexpr std::chrono::seconds kLostAfter{5};
  // A reply is waited for this much beyond the timeout: a server gives up on
  // a request it parked at the timeout (counted from its arrival, checked a
  // few times a second) and says what it waited for — which workers — and
  // that reason should reach us before our own, which knows none of it.
  static constexpr std::chrono::milliseconds kServerAnswersFirst{1000};

 private:
  // The socket and its dialer, shared by the clients Share makes.
  struct Connection {
    nng_socket socket = NNG_SOCKET_INITIALIZER;
    std::string endpoint;
    PipeSet pipes;  // a server that went away is given kLostAfter to come back
    ~Connection() { CloseSocket(socket, "the connection to server '" + endpoint + "'"); }
  };
  static void OnPipe(nng_pipe pipe, nng_pipe_ev event, void* arg);
  // Unavailable, saying so, when the connection counts as gone: connected
  // once, down for kLostAfter; Ok otherwise.
  Status CheckConnected() const;
  Status OpenContext();
  // "'update-get' (step 3)": the pending request, for messages.
  std::string Pending() const;
  // Waits for the aio's operation (started) to complete, logging "still
  // waiting WHAT (N s of T HINT)" every kWaitLogEvery that it takes. Returns
  // Unavailable when it stopped waiting early, the operation cancelled
  // because the server went away (CheckConnected); Ok otherwise.
  Status AwaitDone(const std::string& what, const char* hint) EXCLUDES(mu_);
  // Starts `op` on the aio and waits for it (AwaitDone): `what` says what for.
  Status Wait(void (*op)(nng_ctx, nng_aio*), const std::string& what) EXCLUDES(mu_);
  static void OnAio(void* arg);

  std::shared_ptr<Connection> connection_;
  std::string endpoint_;
  int timeout_ms_ = 0;
  nng_ctx ctx_ = NNG_CTX_INITIALIZER;
  nng_aio* aio_ = nullptr;
  bool context_open_ = false;
  bool sending_ = false;  // a Send whose leaving Receive has not waited for yet
  MsgHeader pending_;     // the request awaiting its reply, for messages
  std::string label_ = "this process";
  SpareMessage spare_;  // a recycled reply, for the next request
  // The aio's completions, which its callback signals (a long wait is logged).
  Mutex mu_;
  CondVar done_cv_{&mu_};
  bool done_ GUARDED_BY(mu_) = true;
};

}  // namespace shoal
