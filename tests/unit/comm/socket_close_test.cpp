// Tests for lib/comm/socket_close: a socket with a live connection closes,
// and its pipe callbacks are gone before the close tears the pipe down.
#include "comm/socket_close.h"

#include <doctest/doctest.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/util/platform.h>

#include <atomic>
#include <string>

namespace shoal {
namespace {

void CountEvent(nng_pipe, nng_pipe_ev, void* count) { ++*static_cast<std::atomic<int>*>(count); }

TEST_CASE("a connected socket closes, and its pipe callbacks do not see the close") {
  nng_socket server, client;
  REQUIRE(nng_rep0_open(&server) == 0);
  REQUIRE(nng_req0_open(&client) == 0);
  nng_listener listener;
  REQUIRE(nng_listen(server, "tcp://127.0.0.1:0", &listener, 0) == 0);
  int port = 0;
  REQUIRE(nng_listener_get_int(listener, NNG_OPT_TCP_BOUND_PORT, &port) == 0);
  std::atomic<int> added{0}, removed{0};
  nng_pipe_notify(client, NNG_PIPE_EV_ADD_POST, CountEvent, &added);
  nng_pipe_notify(client, NNG_PIPE_EV_REM_POST, CountEvent, &removed);
  REQUIRE(nng_dial(client, ("tcp://127.0.0.1:" + std::to_string(port)).c_str(), nullptr, 0) == 0);
  for (int waited = 0; added == 0 && waited < 5000; waited += 5) nng_msleep(5);
  REQUIRE(added == 1);

  CloseSocket(client, "the test's client");
  CHECK(removed == 0);  // the pipe went with the socket, unreported
  CHECK(nng_send(client, const_cast<char*>("x"), 1, 0) == NNG_ECLOSED);
  CloseSocket(server, "the test's server");
  CHECK(nng_send(server, const_cast<char*>("x"), 1, 0) == NNG_ECLOSED);
}

TEST_CASE("a socket never opened is left alone") { CloseSocket(NNG_SOCKET_INITIALIZER, "nothing"); }

}  // namespace
}  // namespace shoal
