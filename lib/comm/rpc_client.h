// A request/reply client over NNG (req0) to one peer. Every wait is bounded
// by the timeout, and a timeout names the peer and what was asked.
#pragma once

#include <nng/nng.h>

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
  // Send and Receive are split so that requests to several servers can be
  // in flight at once; one request per client at a time.
  Status Send(const MsgHeader& header, const std::vector<EntryRef>& entries,
              const std::string& text = "");
  // Waits for the reply to the last Send; a kError reply becomes an error.
  Status Receive(Reply* reply);
  Status Call(const MsgHeader& header, const std::vector<EntryRef>& entries, Reply* reply) {
    SHOAL_RETURN_IF_ERROR(Send(header, entries));
    return Receive(reply);
  }
  const std::string& endpoint() const { return endpoint_; }

 private:
  nng_socket socket_ = NNG_SOCKET_INITIALIZER;
  bool open_ = false;
  std::string endpoint_;
  int timeout_ms_ = 0;
  MsgHeader pending_;  // the request awaiting its reply, for messages
};

}  // namespace shoal
