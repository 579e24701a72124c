#include "comm/rpc_client.h"

#include <nng/protocol/reqrep0/req.h>

namespace shoal {

void Reply::Reset() {
  if (msg_) nng_msg_free(msg_);
  msg_ = nullptr;
  view_ = MessageView();
}

RpcClient::~RpcClient() {
  if (open_) nng_close(socket_);
}

Status RpcClient::Dial(const std::string& endpoint, int timeout_ms, const TlsIdentity& tls) {
  endpoint_ = endpoint;
  timeout_ms_ = timeout_ms;
  int rv = nng_req0_open(&socket_);
  if (rv != 0) return Status::IOError(std::string("cannot open a socket: ") + nng_strerror(rv));
  open_ = true;
  nng_socket_set_ms(socket_, NNG_OPT_SENDTIMEO, timeout_ms);
  nng_socket_set_ms(socket_, NNG_OPT_RECVTIMEO, timeout_ms);
  // Never resend on our own: an update applied twice would be wrong, and
  // our timeout already bounds the wait.
  nng_socket_set_ms(socket_, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
  nng_socket_set_ms(socket_, NNG_OPT_RECONNMINT, 20);
  nng_socket_set_ms(socket_, NNG_OPT_RECONNMAXT, 500);
  nng_dialer dialer;
  rv = nng_dialer_create(&dialer, socket_, endpoint.c_str());
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
  return Status::Ok();
}

Status RpcClient::Send(const MsgHeader& header, const std::vector<EntryRef>& entries,
                       const std::string& text) {
  nng_msg* msg = nullptr;
  size_t size = EncodedSize(entries, text);
  int rv = nng_msg_alloc(&msg, size);
  if (rv != 0) return Status::IOError(std::string("cannot allocate a message: ") + nng_strerror(rv));
  Encode(header, entries, text, static_cast<unsigned char*>(nng_msg_body(msg)));
  pending_ = header;
  rv = nng_sendmsg(socket_, msg, 0);
  if (rv != 0) {
    nng_msg_free(msg);
    std::string what = std::string("'") + MsgTypeName(header.type) + "' (step " +
                       std::to_string(header.step) + ")";
    if (rv == NNG_ETIMEDOUT)
      return Status::Timeout("server '" + endpoint_ + "' did not take " + what + " within " +
                             std::to_string(timeout_ms_) + " ms (is it running?)");
    return Status::Unavailable("cannot send " + what + " to server '" + endpoint_ + "': " + nng_strerror(rv));
  }
  return Status::Ok();
}

Status RpcClient::Receive(Reply* reply) {
  reply->Reset();
  std::string what = std::string("'") + MsgTypeName(pending_.type) + "' (step " +
                     std::to_string(pending_.step) + ")";
  int rv = nng_recvmsg(socket_, &reply->msg_, 0);
  if (rv == NNG_ETIMEDOUT)
    return Status::Timeout("server '" + endpoint_ + "' did not answer " + what + " within " +
                           std::to_string(timeout_ms_) + " ms");
  if (rv != 0)
    return Status::Unavailable("no reply from server '" + endpoint_ + "' to " + what + ": " +
                               nng_strerror(rv));
  Status s = Decode(static_cast<const unsigned char*>(nng_msg_body(reply->msg_)),
                    nng_msg_len(reply->msg_), &reply->view_);
  if (!s.ok()) return s.Within("reply from server '" + endpoint_ + "' to " + what);
  if (reply->view_.header.type == MsgType::kError)
    return Status::InvalidArgument("server '" + endpoint_ + "' refused " + what + ": " +
                                   reply->view_.text);
  return Status::Ok();
}

}  // namespace shoal
