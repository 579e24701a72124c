// The wire format of every message between shoal processes: a fixed binary
// header followed by raw little-endian payload — no text encoding of tensors.
//
//   u32 magic "SHOL" | u16 protocol version | u16 type | u64 plan hash |
//   u64 step (version or clock) | u32 sender | u32 entry count | u64 payload bytes
//   payload: `entry count` × (u32 key | u32 float count | floats), or, for
//   kError, kStats and kMetric, UTF-8 text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace shoal {

enum class MsgType : uint16_t {
  kGet = 1,       // step = the parameter version needed (the final ones come with done)
  kUpdate = 2,    // gradients of step `step`
  kPut = 3,       // overwrite values
  kStats = 4,     // reply carries JSON text
  kShutdown = 5,  // checkpoint and exit
  kDone = 6,      // the sender has finished training
  kUpdateGet = 7, // an update, answered with the parameters of version step + 1
  kMetric = 8,    // text: an evaluation (JSON) to record in the next checkpoint
  kJoin = 9,      // answered with the parameters and, as step, the step the sender is to train next
  kFeature = 10,  // between the workers of a group: one entry, a block of a feature or its gradient
  kExchange = 11, // easgd: the sender's parameters after step `step`; answered with the elastic
                  // difference alpha·(x − centre) that the centre moved by (the sender subtracts it)
  kSync = 12,     // between server groups: a server's values, which the receiver averages with its own
  kReply = 100,   // success; entries for a get
  kError = 101,   // failure; text says why
};
const char* MsgTypeName(MsgType type);

constexpr uint32_t kMsgMagic = 0x4C4F4853;  // "SHOL" read as little-endian
constexpr uint16_t kProtocolVersion = 1;
constexpr size_t kHeaderBytes = 40;
constexpr uint32_t kToolSender = ~0u;  // dl-ckpt, tests: not a worker

struct MsgHeader {
  MsgType type = MsgType::kReply;
  uint64_t plan_hash = 0;
  uint64_t step = 0;
  uint32_t sender = 0;
};

// A tensor slice to send: the bytes stay where they are until encoded.
struct EntryRef {
  uint32_t key;
  const float* data;
  uint32_t count;
};

// A decoded entry: points into the received buffer, valid while it lives.
// The data may be unaligned for float: copy it out with std::memcpy.
struct EntryView {
  uint32_t key;
  const unsigned char* data;
  uint32_t count;
};

struct MessageView {
  MsgHeader header;
  std::vector<EntryView> entries;
  std::string text;
};

size_t EncodedSize(const std::vector<EntryRef>& entries, const std::string& text);
// Writes the message into `out`, which holds EncodedSize(...) bytes.
void Encode(const MsgHeader& header, const std::vector<EntryRef>& entries, const std::string& text,
            unsigned char* out);
// Checks everything a peer could get wrong, including trailing bytes.
Status Decode(const unsigned char* data, size_t size, MessageView* out);

}  // namespace shoal
