// A request/reply server over NNG (rep0) with a fixed pool of contexts, each
// an aio state machine (nng's demo/async/server.c): many clients at once,
// and a request may be answered later (a BSP get waits for its version).
#pragma once

#include <nng/nng.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "comm/message.h"
#include "comm/pipe_set.h"
#include "comm/spare_message.h"
#include "comm/tls.h"
#include "core/log.h"
#include "core/status.h"
#include "core/time_sum.h"

namespace shoal {

// A server that hands each decoded request to one handler and sends the reply it is given.
class RpcServer {
 public:
  // Called on an NNG thread for each request that decodes; the handler must
  // eventually call Reply(slot, ...) exactly once. `request` is valid only
  // during the call, and only until that call replies on `slot` (the reply
  // is written over it); `pipe` names the connection it came on.
  using Handler = std::function<void(int slot, const MessageView& request, uint32_t pipe)>;
  // Called for requests that do not decode (a bad peer must not kill us).
  using BadRequest = std::function<void(const Status& why)>;
  // Called on an NNG thread when a connection closes (its peer hung up or died).
  using PipeClosed = std::function<void(uint32_t pipe)>;

  RpcServer() = default;
  ~RpcServer();
  RpcServer(const RpcServer&) = delete;
  RpcServer& operator=(const RpcServer&) = delete;

  // A tls+tcp:// endpoint needs `tls` (this process's identity). A request
  // larger than `max_request_bytes` (0: any size) is dropped by NNG before it
  // is read whole, and its connection closed. An endpoint in use is an
  // I/O error naming it. Returns AddListener's error for the endpoint, and
  // IOError when the socket or a slot cannot be set up; Close then frees
  // what was set up.
  Status Listen(const std::string& endpoint, int slots, Handler handler, BadRequest bad,
                const TlsIdentity& tls = {}, size_t max_request_bytes = 0, PipeClosed closed = nullptr);
  // Also takes requests at `endpoint` (after Listen): an inproc:// one, say,
  // for clients in this process, whose messages NNG hands over in memory (a
  // req0 client keeps its own for a resend, so NNG gives the server a copy it
  // owns and may write over: Reply encodes over the request).
  // Returns IOError naming the endpoint when it is in use, InvalidArgument
  // for any other endpoint that cannot be listened on, and TLS set-up errors.
  Status AddListener(const std::string& endpoint, const TlsIdentity& tls = {});
  // Answers slot `slot`'s request, encoded over it where it has the room: an
  // entry's already_at may point into that request (Encode in place).
  // When no message can be had the reply is dropped unlogged and the slot
  // takes its next request; the client then times out.
  void Reply(int slot, const MsgHeader& header, const std::vector<EntryRef>& entries,
             const std::string& text = "");
  // Waits until every reply handed to NNG has left this socket for its
  // connection (or `timeout_ms` passes), then up to `linger_ms` for every
  // client to hang up: left is not read, and closing under a client that is
  // still reading cuts its last reply short.
  void Drain(int timeout_ms, int linger_ms);
  void Close();
  // Whether connection `pipe` has closed: a request can be handled after its
  // connection's close was (its peer sent and died), and must not make it live again.
  bool Closed(uint32_t pipe) const { return pipes_.Closed(pipe); }
  // Bytes of every request read and every reply handed to NNG, headers included.
  uint64_t bytes_received() const { return bytes_received_; }
  uint64_t bytes_sent() const { return bytes_sent_; }
  // Seconds spent decoding requests and encoding replies (message allocation included).
  double decode_seconds() const { return decoding_.seconds(); }
  double encode_seconds() const { return encoding_.seconds(); }

 private:
  struct Slot {
    RpcServer* server = nullptr;
    int index = 0;
    nng_aio* aio = nullptr;
    nng_ctx ctx = NNG_CTX_INITIALIZER;
    bool sending = false;
    SpareMessage spare;  // its last request, for its next reply
  };
  static void OnEvent(void* arg);
  static void OnPipe(nng_pipe pipe, nng_pipe_ev event, void* arg);
  void Receive(Slot* slot);

  nng_socket socket_ = NNG_SOCKET_INITIALIZER;
  bool open_ = false;
  Handler handler_;
  BadRequest bad_;
  PipeClosed closed_;
  std::vector<Slot> slots_;
  std::atomic<int> replies_in_flight_{0};
  PipeSet pipes_;
  RateLimitedLog failed_sends_;
  std::atomic<uint64_t> bytes_received_{0}, bytes_sent_{0};
  TimeSum decoding_, encoding_;
};

}  // namespace shoal
