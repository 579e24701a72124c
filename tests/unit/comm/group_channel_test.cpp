// Tests for lib/comm/group_channel: blocks between the workers of one group
// over inproc://, matched by (sender, tag, step) whatever order they come in;
// what is refused (wrong size, a non-peer, another plan, garbage) and what
// gives up (a silent peer, too many early blocks), each naming what is wrong.
#include "comm/group_channel.h"

#include <doctest/doctest.h>
#include <nng/nng.h>
#include <nng/protocol/pipeline0/push.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "comm/message.h"
#include "test_util.h"

namespace shoal {
namespace {

constexpr uint64_t kPlanHash = 0x5eed0123abcdull;

std::vector<std::string> Endpoints(int m) {
  static std::atomic<int> next{0};
  const std::string base = "inproc://group-channel-test-" + std::to_string(next++);
  std::vector<std::string> endpoints;
  for (int r = 0; r < m; ++r) endpoints.push_back(base + "-" + std::to_string(r));
  return endpoints;
}

GroupPeers Peers(const std::vector<std::string>& endpoints, int rank, int first_worker = 0,
                 int timeout_ms = 2000) {
  GroupPeers peers;
  peers.endpoints = endpoints;
  peers.first_worker = first_worker;
  peers.rank = rank;
  peers.plan_hash = kPlanHash;
  peers.timeout_ms = timeout_ms;
  peers.max_block_floats = 1024;
  return peers;
}

// A group of `m` channels, all open: rank r is worker first_worker + r.
struct Group {
  std::vector<std::unique_ptr<GroupChannel>> ranks;
  std::vector<std::string> endpoints;
  Group(int m, int first_worker = 0, int timeout_ms = 2000) : endpoints(Endpoints(m)) {
    for (int r = 0; r < m; ++r) {
      ranks.push_back(std::make_unique<GroupChannel>());
      Status s = ranks.back()->Open(Peers(endpoints, r, first_worker, timeout_ms));
      INFO(s.ToString());
      REQUIRE(s.ok());
    }
  }
  GroupChannel& operator[](int r) { return *ranks[r]; }
};

// Sends from `from` to `to` a block of `count` floats, all `value`.
void SendBlock(GroupChannel& from, int to, uint32_t tag, uint64_t step, float value, size_t count = 2) {
  std::vector<float> v(count, value);
  Status s = from.Send(to, tag, step, v.data(), v.size());
  INFO(s.ToString());
  REQUIRE(s.ok());
}

// Receives a block of `count` floats and gives its first value.
float ReceiveBlock(GroupChannel& at, int from, uint32_t tag, uint64_t step, size_t count = 2) {
  std::vector<float> v(count, -1.0f);
  Status s = at.Receive(from, tag, step, v.data(), v.size(), "test block");
  INFO("tag " << tag << ", step " << step << ": " << s.ToString());
  REQUIRE(s.ok());
  for (float x : v) CHECK(x == v[0]);
  return v[0];
}

// A raw NNG push socket dialled to a channel's endpoint: sends anything.
struct RawPeer {
  nng_socket sock{};
  explicit RawPeer(const std::string& endpoint) {
    REQUIRE(nng_push0_open(&sock) == 0);
    nng_socket_set_ms(sock, NNG_OPT_SENDTIMEO, 2000);
    // Queued here: nothing reads the channel until the test asks it to.
    nng_socket_set_int(sock, NNG_OPT_SENDBUF, 64);
    REQUIRE(nng_dial(sock, endpoint.c_str(), nullptr, 0) == 0);
  }
  ~RawPeer() { nng_close(sock); }
  void SendBytes(const std::vector<unsigned char>& bytes) {
    REQUIRE(nng_send(sock, const_cast<unsigned char*>(bytes.data()), bytes.size(), 0) == 0);
  }
  void SendMessage(const MsgHeader& h, uint32_t tag, const std::vector<float>& values) {
    std::vector<EntryRef> entries{{tag, values.data(), static_cast<uint32_t>(values.size())}};
    std::vector<unsigned char> bytes(EncodedSize(entries, ""));
    Encode(h, entries, "", bytes.data());
    SendBytes(bytes);
  }
};

TEST_CASE("group channel: blocks are matched by sender, tag and step whatever order they are sent in") {
  Group g(3);
  // Rank 1 sends step 1 before step 0 and tag 1 before tag 0; rank 2 sends
  // the same (tag, step) as rank 1 with other values.
  SendBlock(g[1], 0, 1, 1, 11.0f);
  SendBlock(g[1], 0, 0, 1, 10.0f);
  SendBlock(g[1], 0, 1, 0, 1.0f);
  SendBlock(g[1], 0, 0, 0, 0.5f);
  SendBlock(g[2], 0, 0, 0, 200.0f);

  // Rank 0 asks in the other order: rank 2's block first.
  CHECK(ReceiveBlock(g[0], 2, 0, 0) == 200.0f);
  CHECK(ReceiveBlock(g[0], 1, 0, 0) == 0.5f);
  CHECK(ReceiveBlock(g[0], 1, 1, 0) == 1.0f);
  CHECK(ReceiveBlock(g[0], 1, 0, 1) == 10.0f);
  CHECK(ReceiveBlock(g[0], 1, 1, 1) == 11.0f);
  CHECK(g[0].early_blocks() == 0);
  CHECK(g[0].refused() == 0);
  CHECK(g[0].rank() == 0);
  CHECK(g[0].group_size() == 3);
}

TEST_CASE("group channel: blocks that come before they are asked for are held, and counted") {
  Group g(2);
  // One pipe from rank 1 to rank 0 delivers in order: the wanted block comes
  // last, after three that are held.
  SendBlock(g[1], 0, 4, 2, 42.0f);
  SendBlock(g[1], 0, 3, 2, 32.0f);
  SendBlock(g[1], 0, 4, 1, 41.0f);
  SendBlock(g[1], 0, 3, 1, 31.0f);
  CHECK(ReceiveBlock(g[0], 1, 3, 1) == 31.0f);
  CHECK(g[0].early_blocks() == 3);
  CHECK(ReceiveBlock(g[0], 1, 4, 1) == 41.0f);
  CHECK(g[0].early_blocks() == 2);
  CHECK(ReceiveBlock(g[0], 1, 4, 2) == 42.0f);
  CHECK(g[0].early_blocks() == 1);
  CHECK(ReceiveBlock(g[0], 1, 3, 2) == 32.0f);
  CHECK(g[0].early_blocks() == 0);
}

TEST_CASE("group channel: a repeat of a held block replaces it, and is held once") {
  Group g(2);
  SendBlock(g[1], 0, 5, 0, 1.0f);
  SendBlock(g[1], 0, 5, 0, 2.0f);  // the repeat, newer
  SendBlock(g[1], 0, 6, 0, 3.0f);
  CHECK(ReceiveBlock(g[0], 1, 6, 0) == 3.0f);
  CHECK(g[0].early_blocks() == 1);
  CHECK(ReceiveBlock(g[0], 1, 5, 0) == 2.0f);
  CHECK(g[0].early_blocks() == 0);
}

TEST_CASE("group channel: both directions work at once") {
  Group g(2);
  SendBlock(g[0], 1, 0, 0, 7.0f, 3);
  SendBlock(g[1], 0, 0, 0, 8.0f, 3);
  CHECK(ReceiveBlock(g[1], 0, 0, 0, 3) == 7.0f);
  CHECK(ReceiveBlock(g[0], 1, 0, 0, 3) == 8.0f);
}

TEST_CASE(
    "group channel: a block of another size than asked for is refused, naming both sizes and the sender") {
  Group g(2, /*first_worker=*/4);
  SendBlock(g[1], 0, 0, 2, 1.0f, 3);
  std::vector<float> v(4, -1.0f);
  Status s = g[0].Receive(1, 0, 2, v.data(), v.size(), "features of layer 'fc'");
  CHECK(s.IsInvalidArgument());
  CHECK(s.message() == "worker 5 sent 3 floats of features of layer 'fc' (step 2), 4 were expected");
  // Nothing was written.
  for (float x : v) CHECK(x == -1.0f);
}

TEST_CASE(
    "group channel: a receive from a silent peer gives up after the timeout, naming its worker id and "
    "endpoint") {
  const std::vector<std::string> endpoints = Endpoints(2);
  GroupChannel channel;
  REQUIRE(channel.Open(Peers(endpoints, 0, /*first_worker=*/6, /*timeout_ms=*/250)).ok());
  std::vector<float> v(2);
  const auto t0 = std::chrono::steady_clock::now();
  Status s = channel.Receive(1, 1, 9, v.data(), v.size(), "gradients of layer 'fc1'");
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(s.IsTimeout());
  CHECK(s.message() == "worker 6 waited 250 ms for gradients of layer 'fc1' (step 9) from worker 7 at '" +
                           endpoints[1] + "' (is it running?); from it: 0 blocks");
  CHECK(waited >= 0.2);
  CHECK(waited < 2.0);
}

TEST_CASE(
    "group channel: a receive that gives up says what did come from the peer, and which connections closed") {
  Group g(2, /*first_worker=*/2, /*timeout_ms=*/300);
  SendBlock(g[1], 0, 3, 8, 1.0f);
  SendBlock(g[1], 0, 5, 9, 2.0f);
  CHECK(ReceiveBlock(g[0], 1, 3, 8) == 1.0f);
  std::vector<float> v(2);
  Status s = g[0].Receive(1, 1, 9, v.data(), v.size(), "features of layer 'data'");
  CHECK(s.IsTimeout());
  CHECK(s.message() == "worker 2 waited 300 ms for features of layer 'data' (step 9) from worker 3 at '" +
                           g.endpoints[1] +
                           "' (is it running?); from it: 2 blocks, the last tag 5 of step 9, " +
                           "1 held that came before they were asked for");
  // The peer goes: its connection into rank 0 closes, and so does rank 0's into it.
  // NNG tells of each from a thread of its own, late on a loaded machine: up to 30 s.
  g.ranks[1].reset();
  for (int i = 0; i < 100; ++i) {
    s = g[0].Receive(1, 1, 9, v.data(), v.size(), "features of layer 'data'");
    if (s.message().find("connections ended (or refused): 1 into this worker, 1 out of it") !=
        std::string::npos)
      break;
  }
  CHECK(s.message().find(
            "; connections ended (or refused): 1 into this worker, 1 out of it, with any peer (a block in "
            "flight on one may be lost)") != std::string::npos);
}

TEST_CASE(
    "group channel: messages from a non-peer, of another plan or garbage are refused and counted; the real "
    "block arrives") {
  Group g(2, /*first_worker=*/2, /*timeout_ms=*/500);
  RawPeer raw(g.endpoints[0]);
  const std::vector<float> good{1.5f, 2.5f};
  // Garbage bytes.
  raw.SendBytes({'n', 'o', 't', ' ', 'a', ' ', 'b', 'l', 'o', 'c', 'k'});
  // A block of another plan, from the real peer (worker 3).
  raw.SendMessage({MsgType::kFeature, kPlanHash + 1, 0, 3}, 0, {9.0f, 9.0f});
  // A block from worker 9, not of this group.
  raw.SendMessage({MsgType::kFeature, kPlanHash, 0, 9}, 0, {9.0f, 9.0f});
  // A block claiming to come from the receiver itself (worker 2).
  raw.SendMessage({MsgType::kFeature, kPlanHash, 0, 2}, 0, {9.0f, 9.0f});
  // Not a feature block.
  raw.SendMessage({MsgType::kUpdate, kPlanHash, 0, 3}, 0, {9.0f, 9.0f});
  // Then the wanted block, on the same pipe, so after all of those.
  raw.SendMessage({MsgType::kFeature, kPlanHash, 0, 3}, 0, good);

  std::vector<float> v(2, -1.0f);
  Status s = g[0].Receive(1, 0, 0, v.data(), v.size(), "test block");
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(v == good);
  CHECK(g[0].refused() == 5);
  CHECK(g[0].early_blocks() == 0);

  // The peer's own channel still gets through.
  SendBlock(g[1], 0, 1, 0, 4.0f);
  CHECK(ReceiveBlock(g[0], 1, 1, 0) == 4.0f);

  // A later timeout tells of the refusals, the last one named.
  raw.SendMessage({MsgType::kFeature, kPlanHash, 1, 11}, 0, good);
  s = g[0].Receive(1, 0, 1, v.data(), v.size(), "test block");
  CHECK(s.IsTimeout());
  CHECK(Contains(s.message(),
                 "it refused 6 bad messages, the last: a block from sender 11, not a peer of this group"));
  CHECK(g[0].refused() == 6);
}

TEST_CASE("group channel: a peer that sends too many blocks ahead is refused, naming it") {
  Group g(2, /*first_worker=*/0);
  // kMaxEarlyBlocks blocks nobody asks for, then one more.
  const uint64_t n = GroupChannel::kMaxEarlyBlocks + 1;
  for (uint64_t step = 1; step <= n; ++step) SendBlock(g[1], 0, 0, step, static_cast<float>(step), 1);
  std::vector<float> v(1);
  Status s = g[0].Receive(1, 0, 0, v.data(), v.size(), "test block");
  CHECK(s.IsInvalidArgument());
  CHECK(s.message() == "worker 0 holds " + std::to_string(GroupChannel::kMaxEarlyBlocks) +
                           " blocks that arrived before they were asked for; the last from worker 1 (step " +
                           std::to_string(n) + ")");
  CHECK(g[0].early_blocks() == GroupChannel::kMaxEarlyBlocks);
  // The blocks held are still there to be taken.
  CHECK(ReceiveBlock(g[0], 1, 0, 1, 1) == 1.0f);
  CHECK(ReceiveBlock(g[0], 1, 0, GroupChannel::kMaxEarlyBlocks, 1) ==
        static_cast<float>(GroupChannel::kMaxEarlyBlocks));
  CHECK(g[0].early_blocks() == GroupChannel::kMaxEarlyBlocks - 2);
}

TEST_CASE("group channel: a rank outside the group and an endpoint it cannot listen on are refused") {
  const std::vector<std::string> endpoints = Endpoints(2);
  GroupChannel outside;
  Status s = outside.Open(Peers(endpoints, 2));
  CHECK(s.IsInvalidArgument());
  CHECK(s.message() == "rank 2 is not in a group of 2");

  GroupChannel first, second;
  REQUIRE(first.Open(Peers(endpoints, 0)).ok());
  s = second.Open(Peers(endpoints, 0, /*first_worker=*/8));
  CHECK(!s.ok());
  CHECK(Contains(s.message(), "worker 8: cannot listen on '" + endpoints[0] + "'"));
}

}  // namespace
}  // namespace shoal
