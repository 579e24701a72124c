#include "comm/spare_message.h"

#include <doctest/doctest.h>

#include <cstring>

namespace shoal {
namespace {

TEST_CASE("a spare message is written over when it has the room, and given up when it has not") {
  SpareMessage spare;
  nng_msg* first = nullptr;
  REQUIRE(spare.Take(4096, &first) == 0);  // nothing kept yet: a new one
  REQUIRE(nng_msg_len(first) == 4096);
  std::memset(nng_msg_body(first), 7, 4096);
  REQUIRE(nng_msg_header_append_u32(first, 42) == 0);  // as a received message carries its protocol's header
  spare.Keep(first);

  nng_msg* again = nullptr;
  REQUIRE(spare.Take(1000, &again) == 0);
  CHECK(again == first);  // the same message, shorter, its bytes as they were, no header
  CHECK(nng_msg_len(again) == 1000);
  CHECK(nng_msg_header_len(again) == 0);
  CHECK(static_cast<unsigned char*>(nng_msg_body(again))[999] == 7);
  spare.Keep(again);

  nng_msg* bigger = nullptr;
  REQUIRE(spare.Take(8192, &bigger) == 0);  // too small: freed, and a new one made
  CHECK(nng_msg_len(bigger) == 8192);
  CHECK(nng_msg_capacity(bigger) >= 8192);
  nng_msg_free(bigger);

  nng_msg* none = nullptr;
  REQUIRE(spare.Take(16, &none) == 0);  // nothing kept: new again
  spare.Keep(none);                     // freed with the spare
}

}  // namespace
}  // namespace shoal
