#include "comm/rpc_client.h"

#include <nng/protocol/reqrep0/req.h>

#include "core/log.h"

namespace shoal {

void Reply::Reset() {
  if (msg_) nng_msg_free(msg_);
  msg_ = nullptr;
  view_ = MessageView();
}

RpcClient::~RpcClient() {
  if (!aio_) return;
  nng_aio_stop(aio_);  // a request still leaving is abandoned (its callback runs first)
  if (sending_ && nng_aio_result(aio_) != 0 && nng_aio_get_msg(aio_)) nng_msg_free(nng_aio_get_msg(aio_));
  if (context_open_) nng_ctx_close(ctx_);
  nng_aio_free(aio_);
}

Status RpcClient::Dial(const std::string& endpoint, int timeout_ms, const TlsIdentity& tls) {
  endpoint_ = endpoint;
  timeout_ms_ = timeout_ms;
  nng_socket socket;
  int rv = nng_req0_open(&socket);
  if (rv != 0) return Status::IOError(std::string("cannot open a socket: ") + nng_strerror(rv));
  connection_ = std::make_shared<Connection>();
  connection_->socket = socket;
  connection_->endpoint = endpoint;
  nng_pipe_notify(socket, NNG_PIPE_EV_ADD_POST, OnPipe, connection_.get());
  nng_pipe_notify(socket, NNG_PIPE_EV_REM_POST, OnPipe, connection_.get());
  // Never resend on our own: an update applied twice would be wrong, and
  // our timeout already bounds the wait. Contexts take this when opened.
  nng_socket_set_ms(socket, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
  nng_socket_set_ms(socket, NNG_OPT_RECONNMINT, 20);
  nng_socket_set_ms(socket, NNG_OPT_RECONNMAXT, 500);
  nng_dialer dialer;
  rv = nng_dialer_create(&dialer, socket, endpoint.c_str());
  if (rv != 0) return Status::InvalidArgument("cannot dial '" + endpoint + "': " + nng_strerror(rv));
  nng_tls_config* config = nullptr;
  SHOAL_RETURN_IF_ERROR(TlsConfigFor(endpoint, tls, false, &config));
  if (config) {
    rv = nng_dialer_set_ptr(dialer, NNG_OPT_TLS_CONFIG, config);
    nng_tls_config_free(config);  // the dialer holds its own reference
    if (rv != 0) return Status::IOError("cannot use TLS on '" + endpoint + "': " + nng_strerror(rv));
  }
  rv = nng_dialer_start(dialer, NNG_FLAG_NONBLOCK);
  if (rv != 0) return Status::InvalidArgument("cannot dial '" + endpoint + "': " + nng_strerror(rv));
  return OpenContext();
}

Status RpcClient::Share(std::unique_ptr<RpcClient>* other) const {
  if (!connection_) return Status::InvalidArgument("a client shares its connection only once it has dialled");
  auto shared = std::make_unique<RpcClient>();
  shared->connection_ = connection_;
  shared->endpoint_ = endpoint_;
  shared->timeout_ms_ = timeout_ms_;
  shared->label_ = label_;
  SHOAL_RETURN_IF_ERROR(shared->OpenContext());
  *other = std::move(shared);
  return Status::Ok();
}

void RpcClient::OnPipe(nng_pipe pipe, nng_pipe_ev event, void* arg) {
  auto* c = static_cast<Connection*>(arg);
  const auto id = static_cast<uint32_t>(nng_pipe_id(pipe));
  if (event == NNG_PIPE_EV_ADD_POST)
    c->pipes.Added(id);
  else
    c->pipes.Removed(id);
}

Status RpcClient::CheckConnected() const {
  const std::chrono::milliseconds down = connection_->pipes.EmptyFor();
  if (down < kLostAfter) return Status::Ok();
  return Status::Unavailable("server '" + endpoint_ + "' went away (its connection has been closed for " +
                             std::to_string(down.count() / 1000) + " s) while " + label_ +
                             " waited for it to answer " + Pending());
}

void RpcClient::OnAio(void* arg) {
  auto* client = static_cast<RpcClient*>(arg);
  MutexLock lock(&client->mu_);
  client->done_ = true;
  client->done_cv_.SignalAll();
}

Status RpcClient::AwaitDone(const std::string& what, const char* hint) {
  MutexLock lock(&mu_);
  const auto start = std::chrono::steady_clock::now();
  auto next_log = start + kWaitLogEvery;
  while (!done_) {
    done_cv_.WaitUntil(std::chrono::steady_clock::now() + std::chrono::milliseconds(250));
    if (done_) break;
    const Status connected = CheckConnected();
    if (!connected.ok()) {
      mu_.Unlock();
      nng_aio_cancel(aio_);  // the callback runs; nng_aio_wait then returns at once
      mu_.Lock();
      return connected;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now < next_log) continue;
    next_log += kWaitLogEvery;
    Log(label_ + ": still waiting " + what + " (" +
        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - start).count()) + " s of " +
        std::to_string(timeout_ms_ / 1000) + hint + ")");
  }
  return Status::Ok();
}

Status RpcClient::Wait(void (*op)(nng_ctx, nng_aio*), const std::string& what) {
  {
    MutexLock lock(&mu_);
    done_ = false;
  }
  op(ctx_, aio_);
  return AwaitDone("for server '" + endpoint_ + "' " + what, "");
}

Status RpcClient::OpenContext() {
  int rv = nng_aio_alloc(&aio_, OnAio, this);
  if (rv == 0) rv = nng_ctx_open(&ctx_, connection_->socket);
  if (rv != 0)
    return Status::IOError("cannot open a request context to '" + endpoint_ + "': " + nng_strerror(rv));
  context_open_ = true;
  nng_ctx_set_ms(ctx_, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
  return Status::Ok();
}

std::string RpcClient::Pending() const {
  const std::string type = std::string("'") + MsgTypeName(pending_.type) + "'";
  if (pending_.type == MsgType::kJoin && pending_.step == kJoinWhereTheServerIs) return type;
  return type + " (step " + std::to_string(pending_.step) + ")";
}

Status RpcClient::Send(const MsgHeader& header, const std::vector<EntryRef>& entries,
                       const std::string& text) {
  if (sending_) {  // the previous request is replaced, as a req socket does; let it leave first
    nng_aio_wait(aio_);
    if (nng_aio_result(aio_) != 0) nng_msg_free(nng_aio_get_msg(aio_));
    sending_ = false;
  }
  {
    MutexLock lock(&mu_);
    done_ = false;
  }
  nng_msg* msg = nullptr;
  int rv = spare_.Take(EncodedSize(entries, text), &msg);
  if (rv != 0) return Status::IOError(std::string("cannot allocate a message: ") + nng_strerror(rv));
  Encode(header, entries, text, static_cast<unsigned char*>(nng_msg_body(msg)));
  pending_ = header;
  nng_aio_set_msg(aio_, msg);
  nng_aio_set_timeout(aio_, timeout_ms_);
  nng_ctx_send(ctx_, aio_);
  sending_ = true;
  return Status::Ok();
}

Status RpcClient::WaitSent() {
  if (!aio_ || !sending_) return Status::Ok();
  nng_aio_wait(aio_);
  return nng_aio_result(aio_) == 0 ? Status::Ok()
                                   : Status::Unavailable("a request to '" + endpoint_ + "' did not leave");
}

Status RpcClient::Receive(Reply* reply) {
  reply->Reset();
  if (sending_) {
    // A request that cannot leave because the server's connection closed
    // (it died between two requests) is given up on as soon as the server
    // counts as gone, as a reply is, not at the end of the timeout.
    const Status connected =
        AwaitDone("to reach server '" + endpoint_ + "' with " + Pending(), "; is it running?");
    nng_aio_wait(aio_);
    sending_ = false;
    int rv = nng_aio_result(aio_);
    if (rv != 0) {
      nng_msg_free(nng_aio_get_msg(aio_));
      if (!connected.ok()) return connected;
      if (rv == NNG_ETIMEDOUT)
        return Status::Timeout("server '" + endpoint_ + "' did not take " + Pending() + " within " +
                               std::to_string(timeout_ms_) + " ms (is it running?)");
      return Status::Unavailable("cannot send " + Pending() + " to server '" + endpoint_ +
                                 "': " + nng_strerror(rv));
    }
  }
  const int reply_ms = timeout_ms_ + static_cast<int>(kServerAnswersFirst.count());
  nng_aio_set_timeout(aio_, reply_ms);
  const Status connected = Wait(nng_ctx_recv, "to answer " + Pending());
  nng_aio_wait(aio_);
  if (!connected.ok()) return connected;
  int rv = nng_aio_result(aio_);
  if (rv == NNG_ETIMEDOUT)
    return Status::Timeout("server '" + endpoint_ + "' did not answer " + Pending() + " within " +
                           std::to_string(reply_ms) + " ms");
  if (rv != 0)
    return Status::Unavailable("no reply from server '" + endpoint_ + "' to " + Pending() + ": " +
                               nng_strerror(rv));
  reply->msg_ = nng_aio_get_msg(aio_);
  Status s = Decode(static_cast<const unsigned char*>(nng_msg_body(reply->msg_)), nng_msg_len(reply->msg_),
                    &reply->view_);
  if (!s.ok()) return s.Within("reply from server '" + endpoint_ + "' to " + Pending());
  if (reply->view_.header.type == MsgType::kError)
    return Status::InvalidArgument("server '" + endpoint_ + "' refused " + Pending() + ": " +
                                   reply->view_.text);
  if (reply->view_.header.type == MsgType::kTimedOut)
    return Status::Timeout("server '" + endpoint_ + "' gave up on " + Pending() + ": " + reply->view_.text);
  if (reply->view_.header.type == MsgType::kStopping) {
    // Returned once the server has gone (its connection closed, or kLostAfter
    // passed): a supervisor that sees this worker exit counts its server dead.
    connection_->pipes.WaitEmpty(kLostAfter);
    return Status::Unavailable("server '" + endpoint_ + "' stopped before answering " + Pending() + ": " +
                               reply->view_.text);
  }
  return Status::Ok();
}

}  // namespace shoal
