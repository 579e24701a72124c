// A hostile peer for tests/integration/hostile_peer_test.sh: sends a server
// `count` malformed or mutated requests — truncated, lying lengths, another
// plan's hash, wrong types, random bytes, impostor workers, far-future reads,
// bad metrics — over NNG, and holds connections open half-way over raw TCP
// (a frame announced and never sent, bytes one at a time). Prints one JSON
// line: what it sent, how many were refused, told to wait (joins as a live
// worker), answered as reads (stats and parameters, which anyone may read),
// answered otherwise (a change taken: the test fails), or not answered at all.
//   hostile_peer ENDPOINT PLAN_HASH_HEX COUNT SEED
#include <arpa/inet.h>
#include <netinet/in.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "comm/message.h"

namespace {

using namespace shoal;

std::vector<unsigned char> Encoded(const MsgHeader& h, const std::vector<EntryRef>& entries,
                                   const std::string& text = "") {
  std::vector<unsigned char> bytes(EncodedSize(entries, text));
  Encode(h, entries, text, bytes.data());
  return bytes;
}

template <typename T>
void PutAt(std::vector<unsigned char>* b, size_t at, T v) {
  if (at + sizeof v <= b->size()) std::memcpy(b->data() + at, &v, sizeof v);
}

// One malformed request of kind `kind`.
std::vector<unsigned char> Hostile(int kind, uint64_t plan, std::mt19937_64& rng) {
  static const std::vector<float> floats(300, 0.5f);
  const uint32_t worker = rng() % 3;  // 0 and 1 are real workers' ids, 2 is none
  MsgHeader h{MsgType::kUpdate, plan, rng() % 50, worker, rng()};
  std::vector<EntryRef> entries{
      {static_cast<uint32_t>(rng() % 8), floats.data(), static_cast<uint32_t>(rng() % 300)}};
  std::vector<unsigned char> b = Encoded(h, entries);
  switch (kind) {
    case 0:
      b.resize(rng() % b.size());
      break;  // truncated
    case 1:
      PutAt<uint64_t>(&b, 32, rng());
      break;  // payload length lies
    case 2:
      PutAt<uint32_t>(&b, 28, 0xFFFFFFFFu);
      break;  // 2^32−1 entries announced
    case 3:
      PutAt<uint32_t>(&b, kHeaderBytes + 8, 0x7FFFFFFFu);
      break;  // an entry's count lies
    case 4:
      PutAt<uint64_t>(&b, 8, plan ^ 1);
      break;  // another plan
    case 5:
      PutAt<uint16_t>(&b, 6, static_cast<uint16_t>(rng() % 200));
      break;  // any type
    case 6:
      for (auto& c : b) c = static_cast<unsigned char>(rng());
      break;  // random bytes
    case 7:
      b = Encoded({MsgType::kUpdateGet, plan, rng(), worker, rng()}, entries);
      break;  // an impostor's step
    case 8:
      b = Encoded({MsgType::kGet, plan, rng() | (1ull << 40), kToolSender}, {});
      break;  // far-future read
    case 9:
      b = Encoded({MsgType::kMetric, plan, 0, 0, 0}, {}, std::string(rng() % 2000, '['));
      break;
    case 10:
      b = Encoded({MsgType::kJoin, plan, rng(), worker, rng()}, {});
      break;  // a second live worker
    case 11:
      b = Encoded({MsgType::kDone, plan, 0, worker, rng()}, {});
      break;  // not this worker's life
    default:
      b = Encoded({MsgType::kSync, plan, 0, 0x80000000u + 7, 0}, entries);
      break;
  }
  return b;
}

// Raw TCP to host:port: SP's header for req0, then a frame announced and
// never (or barely) sent: held open, a byte now and then.
struct HalfOpen {
  std::vector<int> fds;
  HalfOpen(const std::string& host, int port, int n) {
    for (int i = 0; i < n; ++i) {
      int fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<uint16_t>(port));
      inet_pton(AF_INET, host.c_str(), &a.sin_addr);
      if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        close(fd);
        continue;
      }
      const unsigned char sp[8] = {0, 'S', 'P', 0, 0, 0x30, 0, 0};  // req0 = protocol 48
      (void)!write(fd, sp, sizeof sp);
      // Half of them announce 4 GiB, half a megabyte they then dribble.
      const uint64_t length = i % 2 ? (uint64_t{1} << 32) : (uint64_t{1} << 20);
      unsigned char frame[8];
      for (int k = 0; k < 8; ++k) frame[k] = static_cast<unsigned char>(length >> (56 - 8 * k));
      (void)!write(fd, frame, sizeof frame);
      fds.push_back(fd);
    }
  }
  void Dribble() {
    const unsigned char byte = 0x80;
    for (int fd : fds) (void)!send(fd, &byte, 1, MSG_NOSIGNAL);
  }
  ~HalfOpen() {
    for (int fd : fds) close(fd);
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s ENDPOINT PLAN_HASH_HEX COUNT SEED\n", argv[0]);
    return 2;
  }
  const std::string endpoint = argv[1];
  const uint64_t plan = std::stoull(argv[2], nullptr, 16);
  const long count = std::stol(argv[3]);
  std::mt19937_64 rng(std::stoull(argv[4]));
  // tcp://HOST:PORT: the half-open connections go there too.
  const auto colon = endpoint.rfind(':');
  const std::string host = endpoint.substr(6, colon - 6);
  HalfOpen half(host, std::stoi(endpoint.substr(colon + 1)), 8);

  nng_socket s;
  if (nng_req0_open(&s) != 0 || nng_dial(s, endpoint.c_str(), nullptr, 0) != 0) {
    std::fprintf(stderr, "hostile_peer: cannot reach '%s'\n", endpoint.c_str());
    return 1;
  }
  nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, 1000);
  nng_socket_set_ms(s, NNG_OPT_SENDTIMEO, 1000);
  long refused = 0, waited = 0, unanswered = 0, answered = 0, reads = 0;
  std::string answered_kinds;  // kind:reply type:request type of the first few answered
  long sent = 0;
  for (long i = 0; i < count && unanswered < 3; ++i, ++sent) {  // a server that has gone answers nothing more
    const std::vector<unsigned char> b = Hostile(static_cast<int>(i % 13), plan, rng);
    if (nng_send(s, const_cast<unsigned char*>(b.data()), b.size(), 0) != 0) {
      ++unanswered;
      continue;
    }
    void* reply = nullptr;
    size_t size = 0;
    if (nng_recv(s, &reply, &size, NNG_FLAG_ALLOC) != 0) {
      ++unanswered;
      continue;
    }
    MessageView view;
    const bool decoded = Decode(static_cast<unsigned char*>(reply), size, &view).ok();
    const int type = b.size() >= 8 ? b[6] | (b[7] << 8) : -1;
    if (decoded && view.header.type == MsgType::kError) ++refused;
    // A join of a live worker's id is told to wait (its old life's end may
    // not have been heard yet), and never admitted while that life is connected.
    else if (decoded && view.header.type == MsgType::kWait && type == static_cast<int>(MsgType::kJoin))
      ++waited;
    else if (decoded && (view.header.type == MsgType::kStats || type == static_cast<int>(MsgType::kGet)))
      ++reads;  // stats and parameters: anyone may read them
    else if (++answered <= 5)
      answered_kinds += (answered_kinds.empty() ? "" : ",") + std::to_string(i % 13) + ":" +
                        (decoded ? MsgTypeName(view.header.type) : "?") + ":" + std::to_string(type);
    nng_free(reply, size);
    if (i % 500 == 0) half.Dribble();
  }
  nng_close(s);
  std::printf(
      "{\"sent\": %ld, \"refused\": %ld, \"waited\": %ld, \"reads\": %ld, \"answered\": %ld, \"unanswered\": "
      "%ld, "
      "\"half_open\": %zu, \"answered_kinds\": \"%s\"}\n",
      sent, refused, waited, reads, answered, unanswered, half.fds.size(), answered_kinds.c_str());
  return 0;
}
