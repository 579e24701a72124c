// The wire format of every message between shoal processes: a fixed binary
// header followed by raw little-endian payload — no text encoding of tensors.
//
//   u32 magic "SHOL" | u16 protocol version | u16 type | u64 plan hash |
//   u64 step (version or clock) | u32 sender | u32 entry count | u64 payload bytes |
//   u64 incarnation
//   payload: `entry count` entries, or, for kError, kWait, kTimedOut, kStopping, kStats and kMetric, UTF-8
//   text.
// The incarnation names one life of the sending process (its supervisor gives
// it; 0: a tool): a server knows a restarted worker from the one before it.
//   entry: u32 key | u16 encoding | u16 zero | u32 value count | values
// Each entry says how its values are encoded (ValueEncoding): fp32, or IEEE
// half for parameters and gradients under cluster.wire: fp16. Version 1 had
// 8-byte entries of fp32 only, version 2 no incarnation, version 3 no wait,
// version 4 no timed-out; a peer of another version is refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace shoal {

enum class MsgType : uint16_t {
  kGet = 1,          // step = the parameter version needed (the final ones come with done)
  kUpdate = 2,       // gradients of step `step`
  kPut = 3,          // overwrite values
  kStats = 4,        // reply carries JSON text
  kShutdown = 5,     // checkpoint and exit
  kDone = 6,         // the sender has finished training
  kUpdateGet = 7,    // an update, answered with the parameters of version step + 1
  kMetric = 8,       // text: an evaluation (JSON) to record in the next checkpoint
  kJoin = 9,         // answered with the parameters and, as step, the step the sender is to train next;
                     // a join's step asks for the parameters as of that step (kJoinWhereTheServerIs: its own)
  kFeature = 10,     // between the workers of a group: one entry, a block of a feature or its gradient
  kExchange = 11,    // easgd: the sender's parameters after step `step`; answered with the elastic
                     // difference alpha·(x − centre) that the centre moved by (the sender subtracts it)
  kSync = 12,        // between server groups: a server's values, which the receiver averages with its own
  kCheckpoint = 14,  // from a worker: checkpoint when the table reaches version `step` (after now)
  kAlive = 13,       // text: what the sender is busy with (an evaluation) while it waits on no server; the
                     // reads waiting on it are answered kBusy, not timed out, for cluster.timeout_ms after
  kReply = 100,      // success; entries for a get
  kError = 101,      // failure; text says why
  kWait = 102,       // not yet: ask again (a done before every worker is, a join while the id's old life
                     // still counts as connected); text says why
  kTimedOut = 103,   // a read waited its deadline at the server; text says for what (which workers)
  kStopping = 104,   // the server is stopping (shut down, or giving up) and will not answer what was asked;
                     // text says why. The asker's server is going away, as if its connection had closed
  kBusy = 105,       // a read waited its deadline on a worker that says it is busy (kAlive): ask again; text
                     // says who and with what
};
constexpr size_t kMsgTypeCount = 20;
const char* MsgTypeName(MsgType type);
// Whether `type` is one of MsgType's (lib/comm/message.cpp's table).
bool IsMsgType(uint16_t type);
// Whether a message of `type` carries UTF-8 text rather than entries.
bool CarriesText(MsgType type);

constexpr uint32_t kMsgMagic = 0x4C4F4853;  // "SHOL" read as little-endian
constexpr uint16_t kProtocolVersion = 7;
constexpr size_t kHeaderBytes = 48;
constexpr size_t kEntryHeaderBytes = 12;
constexpr uint32_t kToolSender = ~0u;              // dl-ckpt, tests: not a worker
constexpr uint64_t kJoinWhereTheServerIs = ~0ull;  // a join's step: at the step the server says

struct MsgHeader {
  MsgType type = MsgType::kReply;
  uint64_t plan_hash = 0;
  uint64_t step = 0;
  uint32_t sender = 0;
  uint64_t incarnation = 0;
};

// How an entry's values travel.
enum class ValueEncoding : uint16_t {
  kF32 = 0,  // IEEE single, as computed
  kF16 = 1,  // IEEE half (lib/comm/half.h): half the bytes, about 3 significant digits
};
// "fp32", "fp16": as cluster.wire names them (config/choices.h).
constexpr const char* EncodingName(ValueEncoding encoding) {
  return encoding == ValueEncoding::kF32 ? "fp32" : encoding == ValueEncoding::kF16 ? "fp16" : "unknown";
}
size_t BytesPerValue(ValueEncoding encoding);

// A tensor slice to send: the floats stay where they are until encoded,
// converted to `encoding` then.
struct EntryRef {
  uint32_t key;
  const float* data;
  uint32_t count;
  ValueEncoding encoding = ValueEncoding::kF32;
  // Where these fp32 values lie already in the buffer being encoded into, if
  // anywhere (a server's reply written over the request whose gradients its
  // update replaced with the new values): Encode in place skips their copy.
  const unsigned char* already_at = nullptr;
};

// A decoded entry: points into the received buffer, valid while it lives.
// The values may be unaligned and either encoding: read them with CopyValues or AddValues.
struct EntryView {
  uint32_t key;
  const unsigned char* data;
  uint32_t count;
  ValueEncoding encoding;
  // The values' bytes on the wire: what the byte counters count.
  size_t value_bytes() const { return count * BytesPerValue(encoding); }
};

// Writes the entry's `count` values, as floats, to `out`.
void CopyValues(const EntryView& entry, float* out);
// Adds them to `sum`, read where they lie (no copy of fp32 values first).
void AddValues(const EntryView& entry, float* sum);

struct MessageView {
  MsgHeader header;
  std::vector<EntryView> entries;
  std::string text;
};

size_t EncodedSize(const std::vector<EntryRef>& entries, const std::string& text);
// Writes the message into `out`, which holds EncodedSize(...) bytes. With
// `in_place`, `out` is the buffer the entries' already_at point into, and an
// entry whose values are already where they go is not copied.
void Encode(const MsgHeader& header, const std::vector<EntryRef>& entries, const std::string& text,
            unsigned char* out, bool in_place = false);
// Checks everything a peer could get wrong, including trailing bytes.
Status Decode(const unsigned char* data, size_t size, MessageView* out);

}  // namespace shoal
