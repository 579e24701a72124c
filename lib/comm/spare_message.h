// A received message kept to encode the next one into. nng_msg_alloc zeroes
// every byte it gives, and for a large message maps fresh pages that fault
// in one by one; a message that already has the room is written over as it
// is. A client keeps its last reply for its next request, a server's slot
// the request it is answering for its reply (lib/comm/rpc_server.cpp): in a
// training exchange the two are the same size (gradients one way, values
// the other).
#pragma once

#include <nng/nng.h>

#include <atomic>
#include <cstddef>

namespace shoal {

// Take and Keep may race (a server slot's reply is taken by whichever
// thread answers it, while the slot's own thread keeps a request):
// the spare changes hands by atomic exchange, so each message has one owner.
class SpareMessage {
 public:
  SpareMessage() = default;
  ~SpareMessage() { Drop(); }
  SpareMessage(SpareMessage&& other) noexcept : msg_(other.msg_.exchange(nullptr)) {}
  SpareMessage& operator=(SpareMessage&& other) noexcept {
    if (this != &other) Keep(other.msg_.exchange(nullptr));
    return *this;
  }
  SpareMessage(const SpareMessage&) = delete;
  SpareMessage& operator=(const SpareMessage&) = delete;

  // A message with a body of `size` bytes and no header: the spare when it
  // has the room (its body where it was, its bytes as they were: `*reused`
  // says so), a new one otherwise. NNG's error, or 0.
  int Take(size_t size, nng_msg** msg, bool* reused = nullptr) {
    nng_msg* spare = msg_.exchange(nullptr);
    if (reused) *reused = false;
    if (spare && nng_msg_capacity(spare) >= size) {
      nng_msg_header_clear(spare);
      *msg = spare;
      if (reused) *reused = true;
      return nng_msg_realloc(spare, size);  // within its capacity: no allocation, no copy, no move
    }
    if (spare) nng_msg_free(spare);
    return nng_msg_alloc(msg, size);
  }
  // Keeps `msg`, which its giver no longer reads, for the next Take.
  void Keep(nng_msg* msg) {
    if (nng_msg* old = msg_.exchange(msg)) nng_msg_free(old);
  }
  void Drop() { Keep(nullptr); }

 private:
  std::atomic<nng_msg*> msg_{nullptr};
};

}  // namespace shoal
