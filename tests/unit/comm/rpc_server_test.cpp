// Tests for lib/comm/rpc_server: its close, with requests answered as it closes.
#include "comm/rpc_server.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "comm/rpc_client.h"
#include "test_util.h"

namespace shoal {
namespace {

// NNG leaves a message handed to a stopped aio where it is, with no callback:
// before Close freed it, this leaked the reply (which the sanitized suite's
// leak check reports; in the normal build the test shows only that the late
// reply neither crashes nor reaches the client).
TEST_CASE("a reply given while the server closes is dropped and freed, not sent") {
  RpcServer server;
  std::promise<void> entered;
  std::atomic<bool> closing{false};
  const std::string endpoint = "inproc://rpc-server-close-test";
  REQUIRE(server
              .Listen(
                  endpoint, 1,
                  [&](int slot, const MessageView&, uint32_t) {
                    entered.set_value();
                    while (!closing) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                    // Close stops this slot's aio first, then waits for this handler to return.
                    std::this_thread::sleep_for(std::chrono::milliseconds(100));
                    server.Reply(slot, MsgHeader{}, {}, "too late");
                  },
                  [](const Status&) {})
              .ok());
  RpcClient client;
  REQUIRE(client.Dial(endpoint, 300).ok());
  REQUIRE(client.Send(MsgHeader{}, {}).ok());
  REQUIRE(entered.get_future().wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  closing = true;
  server.Close();
  Reply reply;
  Status s = client.Receive(&reply);
  INFO(s.ToString());
  CHECK(!s.ok());  // the connection closed under it, with no answer
  CHECK(!Contains(s.message(), "too late"));
}

// A parked request answered by another slot's handler as Close begins (as a
// BSP update answers the gets waiting for its version): that reply, too, is
// dropped and freed, whichever of the two slots Close stops first.
TEST_CASE("a parked request answered from another slot while the server closes is dropped and freed") {
  RpcServer server;
  std::promise<void> parked, entered;
  std::atomic<int> parked_slot{-1};
  std::atomic<bool> closing{false};
  const std::string endpoint = "inproc://rpc-server-close-parked-test";
  REQUIRE(server
              .Listen(
                  endpoint, 2,
                  [&](int slot, const MessageView& request, uint32_t) {
                    if (request.header.step == 1) {  // parked: answered by the next request's handler
                      parked_slot = slot;
                      parked.set_value();
                      return;
                    }
                    entered.set_value();
                    while (!closing) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                    std::this_thread::sleep_for(std::chrono::milliseconds(100));
                    server.Reply(parked_slot, MsgHeader{}, {}, "too late");
                    server.Reply(slot, MsgHeader{}, {}, "too late");
                  },
                  [](const Status&) {})
              .ok());
  RpcClient first, second;
  REQUIRE(first.Dial(endpoint, 300).ok());
  REQUIRE(second.Dial(endpoint, 300).ok());
  MsgHeader header;
  header.step = 1;
  REQUIRE(first.Send(header, {}).ok());
  REQUIRE(parked.get_future().wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  header.step = 2;
  REQUIRE(second.Send(header, {}).ok());
  REQUIRE(entered.get_future().wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  closing = true;
  server.Close();
  for (RpcClient* client : {&first, &second}) {
    Reply reply;
    Status s = client->Receive(&reply);
    INFO(s.ToString());
    CHECK(!s.ok());
    CHECK(!Contains(s.message(), "too late"));
  }
}

}  // namespace
}  // namespace shoal
