// A received message kept to encode the next one into. nng_msg_alloc zeroes
// every byte it gives, and for a large message maps fresh pages that fault
// in one by one; a message that already has the room is written over as it
// is. A client keeps its last reply for its next request, a server's slot
// its last request for its next reply: in a training exchange the two are
// the same size (gradients one way, values the other).
#pragma once

#include <nng/nng.h>

#include <cstddef>
#include <utility>

namespace shoal {

class SpareMessage {
 public:
  SpareMessage() = default;
  ~SpareMessage() { Drop(); }
  SpareMessage(SpareMessage&& other) noexcept : msg_(std::exchange(other.msg_, nullptr)) {}
  SpareMessage& operator=(SpareMessage&& other) noexcept {
    if (this != &other) {
      Drop();
      msg_ = std::exchange(other.msg_, nullptr);
    }
    return *this;
  }
  SpareMessage(const SpareMessage&) = delete;
  SpareMessage& operator=(const SpareMessage&) = delete;

  // A message with a body of `size` bytes (their contents undefined) and no
  // header: the spare when it has the room, a new one otherwise. NNG's error, or 0.
  int Take(size_t size, nng_msg** msg) {
    if (msg_ && nng_msg_capacity(msg_) >= size) {
      *msg = std::exchange(msg_, nullptr);
      nng_msg_header_clear(*msg);
      return nng_msg_realloc(*msg, size);  // within its capacity: no allocation, no copy
    }
    Drop();
    return nng_msg_alloc(msg, size);
  }
  // Keeps `msg`, which its giver no longer reads, for the next Take.
  void Keep(nng_msg* msg) {
    Drop();
    msg_ = msg;
  }
  void Drop() {
    if (msg_) nng_msg_free(std::exchange(msg_, nullptr));
  }

 private:
  nng_msg* msg_ = nullptr;
};

}  // namespace shoal
