// A request/reply client over NNG (req0) to one peer. Every wait is bounded
// by the timeout, and a timeout names the peer and what was asked.
#pragma once

#include <nng/nng.h>

#include <memory>
#include <string>
#include <vector>

#include "comm/message.h"
#include "comm/tls.h"
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
  Status Send(const MsgHeader& header, const std::vector<EntryRef>& entries,
              const std::string& text = "");
  // Waits for the last Send to leave, then for its reply, each within the
  // timeout; a kError reply becomes an error.
  Status Receive(Reply* reply);
  Status Call(const MsgHeader& header, const std::vector<EntryRef>& entries, Reply* reply) {
    SHOAL_RETURN_IF_ERROR(Send(header, entries));
    return Receive(reply);
  }
  const std::string& endpoint() const { return endpoint_; }

 private:
  // The socket and its dialer, shared by the clients Share makes.
  struct Connection {
    nng_socket socket = NNG_SOCKET_INITIALIZER;
    ~Connection() { nng_close(socket); }
  };
  Status OpenContext();
  // "'update-get' (step 3)": the pending request, for messages.
  std::string Pending() const;

  std::shared_ptr<Connection> connection_;
  std::string endpoint_;
  int timeout_ms_ = 0;
  nng_ctx ctx_ = NNG_CTX_INITIALIZER;
  nng_aio* aio_ = nullptr;
  bool context_open_ = false;
  bool sending_ = false;  // a Send whose leaving Receive has not waited for yet
  MsgHeader pending_;     // the request awaiting its reply, for messages
};

}  // namespace shoal
