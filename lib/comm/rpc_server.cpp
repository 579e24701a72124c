#include "comm/rpc_server.h"

#include <nng/protocol/reqrep0/rep.h>
#include <nng/supplemental/util/platform.h>

#include "comm/socket_close.h"

namespace shoal {

RpcServer::~RpcServer() { Close(); }

Status RpcServer::Listen(const std::string& endpoint, int slots, Handler handler, BadRequest bad,
                         const TlsIdentity& tls, size_t max_request_bytes, PipeClosed closed) {
  handler_ = std::move(handler);
  bad_ = std::move(bad);
  closed_ = std::move(closed);
  int rv = nng_rep0_open(&socket_);
  if (rv != 0) return Status::IOError(std::string("cannot open a socket: ") + nng_strerror(rv));
  open_ = true;
  rv = nng_socket_set_size(socket_, NNG_OPT_RECVMAXSZ, max_request_bytes);
  if (rv != 0) return Status::IOError(std::string("cannot bound the request size: ") + nng_strerror(rv));
  nng_pipe_notify(socket_, NNG_PIPE_EV_ADD_POST, OnPipe, this);
  nng_pipe_notify(socket_, NNG_PIPE_EV_REM_POST, OnPipe, this);
  SHOAL_RETURN_IF_ERROR(AddListener(endpoint, tls));
  slots_.resize(slots);
  for (int i = 0; i < slots; ++i) {
    Slot& s = slots_[i];
    s.server = this;
    s.index = i;
    if ((rv = nng_aio_alloc(&s.aio, OnEvent, &s)) != 0 || (rv = nng_ctx_open(&s.ctx, socket_)) != 0)
      return Status::IOError(std::string("cannot set up a server context: ") + nng_strerror(rv));
  }
  for (auto& s : slots_) Receive(&s);
  return Status::Ok();
}

Status RpcServer::AddListener(const std::string& endpoint, const TlsIdentity& tls) {
  nng_listener listener;
  int rv = nng_listener_create(&listener, socket_, endpoint.c_str());
  nng_tls_config* config = nullptr;
  if (rv == 0) SHOAL_RETURN_IF_ERROR(TlsConfigFor(endpoint, tls, true, &config));
  if (config) {
    rv = nng_listener_set_ptr(listener, NNG_OPT_TLS_CONFIG, config);
    nng_tls_config_free(config);  // the listener holds its own reference
  }
  if (rv == 0) rv = nng_listener_start(listener, 0);
  if (rv == NNG_EADDRINUSE)
    return Status::IOError("cannot listen on '" + endpoint +
                           "': address already in use (is another server running there?)");
  if (rv != 0) return Status::InvalidArgument("cannot listen on '" + endpoint + "': " + nng_strerror(rv));
  return Status::Ok();
}

void RpcServer::Receive(Slot* slot) {
  slot->sending = false;
  nng_ctx_recv(slot->ctx, slot->aio);
}

void RpcServer::OnEvent(void* arg) {
  auto* slot = static_cast<Slot*>(arg);
  RpcServer* server = slot->server;
  int rv = nng_aio_result(slot->aio);
  if (slot->sending) {
    if (rv != 0) {
      nng_msg_free(nng_aio_get_msg(slot->aio));
      nng_aio_set_msg(slot->aio, nullptr);
      // A reply to a client that went away leaves quietly (rep0 drops it);
      // any other failure loses a reply someone waits for: say so.
      if (rv != NNG_ECLOSED && rv != NNG_ECANCELED)
        server->failed_sends_.Log("a reply could not be sent (slot " + std::to_string(slot->index) +
                                  "): " + nng_strerror(rv));
    }
    --server->replies_in_flight_;
    server->Receive(slot);
    return;
  }
  if (rv == NNG_ECLOSED || rv == NNG_ECANCELED) return;
  if (rv != 0) {
    server->Receive(slot);
    return;
  }
  nng_msg* msg = nng_aio_get_msg(slot->aio);
  nng_aio_set_msg(slot->aio, nullptr);  // ours now: an aio holds only a message NNG has not taken (Close)
  server->bytes_received_ += nng_msg_len(msg);
  // The request is the slot's spare from here on, so that its reply is
  // written over it: an update's reply (the values, as large as the
  // gradients that came) lands in memory the update has just read, still in
  // cache. The handler reads the request only until it replies.
  slot->spare.Keep(msg);
  MessageView request;
  Status s;
  {
    Timed timed(&server->decoding_);
    s = Decode(static_cast<const unsigned char*>(nng_msg_body(msg)), nng_msg_len(msg), &request);
  }
  if (s.ok()) {
    server->handler_(slot->index, request, nng_pipe_id(nng_msg_get_pipe(msg)));
  } else {
    server->bad_(s);
    MsgHeader h;
    h.type = MsgType::kError;
    server->Reply(slot->index, h, {}, s.ToString());
  }
}

void RpcServer::Reply(int index, const MsgHeader& header, const std::vector<EntryRef>& entries,
                      const std::string& text) {
  Slot& slot = slots_[index];
  nng_msg* msg = nullptr;
  const size_t size = EncodedSize(entries, text);
  {
    Timed timed(&encoding_);
    bool over_request = false;  // the slot's spare is the request this answers (OnEvent)
    if (slot.spare.Take(size, &msg, &over_request) != 0) {
      Receive(&slot);
      return;
    }
    Encode(header, entries, text, static_cast<unsigned char*>(nng_msg_body(msg)), over_request);
  }
  bytes_sent_ += size;
  slot.sending = true;
  ++replies_in_flight_;
  nng_aio_set_msg(slot.aio, msg);
  nng_ctx_send(slot.ctx, slot.aio);
}

void RpcServer::OnPipe(nng_pipe pipe, nng_pipe_ev event, void* arg) {
  auto* server = static_cast<RpcServer*>(arg);
  const auto id = static_cast<uint32_t>(nng_pipe_id(pipe));
  if (event == NNG_PIPE_EV_ADD_POST) return server->pipes_.Added(id);
  server->pipes_.Removed(id);
  if (server->closed_) server->closed_(id);
}

void RpcServer::Drain(int timeout_ms, int linger_ms) {
  for (int waited = 0; replies_in_flight_ > 0 && waited < timeout_ms; waited += 5) nng_msleep(5);
  pipes_.WaitEmpty(std::chrono::milliseconds(linger_ms));
}

void RpcServer::Close() {
  if (!open_) return;
  open_ = false;
  for (auto& s : slots_)
    if (s.aio) nng_aio_stop(s.aio);
  // Every handler has returned now. One that answered another slot's request
  // as Close began may have had that reply failed on the stopped aio with a
  // callback still to run (rep0 finishes it after nng_aio_stop returned): wait for those too.
  for (auto& s : slots_)
    if (s.aio) nng_aio_wait(s.aio);
  for (auto& s : slots_) {
    // A reply handed to an aio already stopped never started: NNG calls no
    // callback for it and leaves the message in the aio, ours to free.
    if (s.aio)
      if (nng_msg* unsent = nng_aio_get_msg(s.aio)) nng_msg_free(unsent);
    nng_ctx_close(s.ctx);
    if (s.aio) nng_aio_free(s.aio);
    s.spare.Drop();
  }
  CloseSocket(socket_, "the server's socket");
  slots_.clear();
  failed_sends_.Flush();
}

}  // namespace shoal
