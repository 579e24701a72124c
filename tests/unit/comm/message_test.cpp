// Tests for lib/comm/message: the wire format round-trips, and Decode refuses
// everything a bad peer could send, saying what was wrong.
#include "comm/message.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace shoal {
namespace {

std::vector<unsigned char> EncodeToBytes(const MsgHeader& h, const std::vector<EntryRef>& entries,
                                         const std::string& text = "") {
  std::vector<unsigned char> bytes(EncodedSize(entries, text));
  Encode(h, entries, text, bytes.data());
  return bytes;
}

Status DecodeBytes(const std::vector<unsigned char>& bytes, MessageView* view) {
  return Decode(bytes.data(), bytes.size(), view);
}

template <typename T>
void PutAt(std::vector<unsigned char>* bytes, size_t offset, T value) {
  std::memcpy(bytes->data() + offset, &value, sizeof value);
}

std::vector<float> Floats(const EntryView& e) {
  std::vector<float> out(e.count);
  CopyValues(e, out.data());
  return out;
}

// Header and entry field offsets, from the layout in message.h.
constexpr size_t kVersionAt = 4, kTypeAt = 6, kCountAt = 28, kPayloadAt = 32, kIncarnationAt = 40;
static_assert(kIncarnationAt + 8 == kHeaderBytes, "the incarnation ends the header");
constexpr size_t kEntryEncodingAt = 4, kEntryZeroAt = 6, kEntryCountAt = 8;

const std::vector<float> kA = {1.5f, -2.0f, 3.25f};
const std::vector<float> kB = {0.0f, 1e-30f, -7.0f, 42.0f, 5.5f};

MsgHeader UpdateHeader() { return {MsgType::kUpdate, 0x0123456789abcdefull, 17, 3, 0xfeedface12345678ull}; }

std::vector<unsigned char> TwoEntryUpdate() {
  return EncodeToBytes(UpdateHeader(), {{7, kA.data(), 3}, {9, kB.data(), 5}});
}

TEST_CASE("an update with several entries survives Encode and Decode unchanged") {
  std::vector<float> empty;
  auto bytes = EncodeToBytes(UpdateHeader(), {{7, kA.data(), 3}, {0, empty.data(), 0}, {9, kB.data(), 5}});
  CHECK(bytes.size() == kHeaderBytes + (12 + 12) + 12 + (12 + 20));
  MessageView view;
  Status s = DecodeBytes(bytes, &view);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(view.header.type == MsgType::kUpdate);
  CHECK(view.header.plan_hash == 0x0123456789abcdefull);
  CHECK(view.header.step == 17);
  CHECK(view.header.sender == 3);
  CHECK(view.header.incarnation == 0xfeedface12345678ull);
  CHECK(view.text.empty());
  REQUIRE(view.entries.size() == 3);
  CHECK(view.entries[0].key == 7);
  CHECK(view.entries[0].encoding == ValueEncoding::kF32);
  CHECK(Floats(view.entries[0]) == kA);
  CHECK(view.entries[1].key == 0);
  CHECK(view.entries[1].count == 0);
  CHECK(view.entries[2].key == 9);
  CHECK(Floats(view.entries[2]) == kB);
}

TEST_CASE("an entry of no values may point nowhere, either way over the wire") {
  const std::vector<float> none;
  for (ValueEncoding encoding : {ValueEncoding::kF32, ValueEncoding::kF16}) {
    const auto bytes =
        EncodeToBytes(UpdateHeader(), {{4, none.data(), 0, encoding}, {7, kA.data(), 3, encoding}});
    MessageView view;
    REQUIRE(DecodeBytes(bytes, &view).ok());
    REQUIRE(view.entries.size() == 2);
    CHECK(view.entries[0].count == 0);
    CopyValues(view.entries[0], nullptr);
    CHECK(Floats(view.entries[1]).size() == 3);
  }
}

TEST_CASE("an exchange carries parameters as entries, type 11 on the wire, and round-trips") {
  auto bytes = EncodeToBytes({MsgType::kExchange, 5, 40, 1}, {{2, kA.data(), 3}});
  CHECK(bytes[kTypeAt] == 11);
  MessageView view;
  Status s = DecodeBytes(bytes, &view);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(view.header.type == MsgType::kExchange);
  CHECK(view.header.step == 40);
  CHECK(view.header.sender == 1);
  REQUIRE(view.entries.size() == 1);
  CHECK(view.entries[0].key == 2);
  CHECK(Floats(view.entries[0]) == kA);
  // It is no text message: text bytes after its entries are refused.
  bytes = EncodeToBytes({MsgType::kExchange, 5, 40, 1}, {{2, kA.data(), 3}}, "x");
  s = DecodeBytes(bytes, &view);
  CHECK(s.IsCorruption());
  CHECK(s.message() == "1 trailing bytes after the entries");
}

TEST_CASE("fp16 entries carry two bytes a value, say so, and decode to the values' nearest halves") {
  const std::vector<float> exact = {1.5f, -2.0f, 3.25f, 65504.0f, 0x1p-24f};
  const std::vector<float> rounded = {0.1f, 1e6f, 1e-9f};
  auto bytes = EncodeToBytes(UpdateHeader(), {{7, exact.data(), 5, ValueEncoding::kF16},
                                              {8, rounded.data(), 3, ValueEncoding::kF16},
                                              {9, kA.data(), 3}});
  CHECK(bytes.size() == kHeaderBytes + (12 + 10) + (12 + 6) + (12 + 12));
  CHECK(bytes[kHeaderBytes + kEntryEncodingAt] == 1);
  MessageView view;
  Status s = DecodeBytes(bytes, &view);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(view.entries.size() == 3);
  CHECK(view.entries[0].encoding == ValueEncoding::kF16);
  CHECK(view.entries[0].value_bytes() == 10);
  CHECK(Floats(view.entries[0]) == exact);
  const std::vector<float> halves = Floats(view.entries[1]);
  CHECK(halves[0] == 0.0999755859375f);
  CHECK(std::isinf(halves[1]));
  CHECK(halves[2] == 0.0f);
  // One message may mix encodings: each entry says its own.
  CHECK(view.entries[2].encoding == ValueEncoding::kF32);
  CHECK(Floats(view.entries[2]) == kA);
}

TEST_CASE("AddValues adds an entry's values where they lie, fp32 and fp16 alike, as CopyValues reads them") {
  std::vector<float> many(2500);  // past AddValues' fp16 chunk of 1024
  for (size_t i = 0; i < many.size(); ++i) many[i] = 0.001f * static_cast<float>(i) - 1.0f;
  for (ValueEncoding encoding : {ValueEncoding::kF32, ValueEncoding::kF16}) {
    // One leading value of another entry puts these at an odd offset: unaligned reads.
    const float one = 3.0f;
    auto bytes = EncodeToBytes(UpdateHeader(), {{1, &one, 1, encoding}, {2, many.data(), 2500, encoding}});
    MessageView view;
    REQUIRE(DecodeBytes(bytes, &view).ok());
    const EntryView& e = view.entries[1];
    std::vector<float> sum(e.count, 0.5f), want = Floats(e);
    AddValues(e, sum.data());
    for (size_t i = 0; i < want.size(); ++i) {
      INFO("value " << i);
      REQUIRE(sum[i] == 0.5f + want[i]);
    }
  }
}

TEST_CASE("Decode refuses an unknown value encoding and a non-zero reserved field, naming the entry") {
  MessageView view;
  for (uint16_t encoding : {2, 3, 0xffff}) {
    auto bytes = TwoEntryUpdate();
    PutAt<uint16_t>(&bytes, kHeaderBytes + kEntryEncodingAt, encoding);
    Status s = DecodeBytes(bytes, &view);
    INFO("encoding " << encoding);
    CHECK(s.IsCorruption());
    CHECK(s.message() == "entry 0 (key 7) has unknown value encoding " + std::to_string(encoding));
  }
  auto bytes = TwoEntryUpdate();
  PutAt<uint16_t>(&bytes, kHeaderBytes + kEntryZeroAt, 5);
  Status s = DecodeBytes(bytes, &view);
  CHECK(s.IsCorruption());
  CHECK(s.message() == "entry 0 (key 7) has 5 where 0 belongs");
}

TEST_CASE("every encoding has a name and a size") {
  CHECK(std::string(EncodingName(ValueEncoding::kF32)) == "fp32");
  CHECK(std::string(EncodingName(ValueEncoding::kF16)) == "fp16");
  CHECK(BytesPerValue(ValueEncoding::kF32) == 4);
  CHECK(BytesPerValue(ValueEncoding::kF16) == 2);
}

TEST_CASE("the header is little-endian with the documented magic, version and payload size") {
  auto bytes = TwoEntryUpdate();
  CHECK(std::string(bytes.begin(), bytes.begin() + 4) == "SHOL");
  CHECK(bytes[kVersionAt] == kProtocolVersion);
  CHECK(bytes[kTypeAt] == 2);
  uint64_t payload;
  std::memcpy(&payload, bytes.data() + kPayloadAt, 8);
  CHECK(payload == bytes.size() - kHeaderBytes);
}

TEST_CASE("encoding in place leaves values that are already where they go, and copies every other") {
  const std::vector<float> a = {1.0f, 2.0f, 3.0f}, b = {4.0f, 5.0f};
  const std::vector<EntryRef> plain = {{1, a.data(), 3}, {2, b.data(), 2}};
  std::vector<unsigned char> bytes(EncodedSize(plain, ""));
  Encode({MsgType::kReply, 1, 0, 0}, plain, "", bytes.data());
  // The buffer's first entry holds other values (the update wrote them there);
  // the second's already_at points elsewhere.
  const size_t first_at = kHeaderBytes + kEntryHeaderBytes;
  const std::vector<float> there = {7.0f, 8.0f, 9.0f};
  std::memcpy(bytes.data() + first_at, there.data(), 12);
  const unsigned char elsewhere[8] = {};
  std::vector<EntryRef> hinted = {{1, a.data(), 3, ValueEncoding::kF32, bytes.data() + first_at},
                                  {2, b.data(), 2, ValueEncoding::kF32, elsewhere}};
  Encode({MsgType::kReply, 1, 0, 0}, hinted, "", bytes.data(), /*in_place=*/true);
  MessageView view;
  REQUIRE(DecodeBytes(bytes, &view).ok());
  std::vector<float> first(3), second(2);
  CopyValues(view.entries[0], first.data());
  CopyValues(view.entries[1], second.data());
  CHECK(first == there);  // not copied over
  CHECK(second == b);
  // Not in place (another buffer), the hint is no reason to skip a copy.
  std::vector<unsigned char> other(bytes.size());
  Encode({MsgType::kReply, 1, 0, 0}, hinted, "", other.data());
  REQUIRE(DecodeBytes(other, &view).ok());
  CopyValues(view.entries[0], first.data());
  CHECK(first == a);
}

TEST_CASE("an error reply carries its text, and extreme header values round-trip") {
  const std::string why = "worker 3 sent step 17 twice — ünïcode kept";
  MsgHeader h{MsgType::kError, ~0ull, ~0ull, kToolSender};
  auto bytes = EncodeToBytes(h, {}, why);
  MessageView view;
  REQUIRE(DecodeBytes(bytes, &view).ok());
  CHECK(view.header.type == MsgType::kError);
  CHECK(view.header.plan_hash == ~0ull);
  CHECK(view.header.step == ~0ull);
  CHECK(view.header.sender == kToolSender);
  CHECK(view.text == why);
  CHECK(view.entries.empty());
}

TEST_CASE("a decoded view is reset: reusing it drops the previous message's entries and text") {
  MessageView view;
  REQUIRE(DecodeBytes(EncodeToBytes({MsgType::kStats, 1, 0, 0}, {}, "{\"version\": 3}"), &view).ok());
  CHECK(view.text == "{\"version\": 3}");
  REQUIRE(DecodeBytes(TwoEntryUpdate(), &view).ok());
  CHECK(view.text.empty());
  CHECK(view.entries.size() == 2);
  REQUIRE(DecodeBytes(EncodeToBytes({MsgType::kGet, 1, 0, 0}, {}), &view).ok());
  CHECK(view.entries.empty());
}

TEST_CASE("Decode refuses a buffer shorter than a header") {
  auto bytes = TwoEntryUpdate();
  MessageView view;
  Status s = Decode(bytes.data(), kHeaderBytes - 1, &view);
  CHECK(s.IsCorruption());
  CHECK(s.message() == "message of 47 bytes is shorter than a header");
  s = Decode(bytes.data(), 0, &view);
  CHECK(s.message() == "message of 0 bytes is shorter than a header");
}

TEST_CASE("Decode refuses a message without shoal's magic") {
  auto bytes = TwoEntryUpdate();
  bytes[0] ^= 0x01;
  MessageView view;
  Status s = DecodeBytes(bytes, &view);
  CHECK(s.IsCorruption());
  CHECK(s.message() == "message does not start with shoal's magic");
}

TEST_CASE("Decode refuses another protocol version, naming both") {
  auto bytes = TwoEntryUpdate();
  PutAt<uint16_t>(&bytes, kVersionAt, 1);  // 8-byte fp32 entries and a shorter header: garbage as version 6
  MessageView view;
  Status s = DecodeBytes(bytes, &view);
  CHECK(s.IsCorruption());
  CHECK(s.message() == "protocol version 1, expected 7");
}

TEST_CASE("Decode refuses an unknown message type, naming it") {
  MessageView view;
  for (uint16_t type : {0, 15, 99, 106, 65535}) {
    auto bytes = TwoEntryUpdate();
    PutAt<uint16_t>(&bytes, kTypeAt, type);
    Status s = DecodeBytes(bytes, &view);
    INFO("type " << type);
    CHECK(s.IsCorruption());
    CHECK(s.message() == "unknown message type " + std::to_string(type));
  }
}

TEST_CASE("Decode refuses a payload length that differs from the bytes received") {
  auto bytes = TwoEntryUpdate();
  const uint64_t actual = bytes.size() - kHeaderBytes;
  MessageView view;
  PutAt<uint64_t>(&bytes, kPayloadAt, actual + 4);
  Status s = DecodeBytes(bytes, &view);
  CHECK(s.IsCorruption());
  CHECK(s.message() == "header announces " + std::to_string(actual + 4) + " payload bytes, message carries " +
                           std::to_string(actual));
  // A message cut short in transit, header intact.
  bytes = TwoEntryUpdate();
  s = Decode(bytes.data(), bytes.size() - 4, &view);
  CHECK(s.message() == "header announces " + std::to_string(actual) + " payload bytes, message carries " +
                           std::to_string(actual - 4));
}

TEST_CASE("Decode refuses an entry announcing more floats than the message holds") {
  auto bytes = TwoEntryUpdate();
  // The second entry (key 9) starts after the header and the first entry.
  const size_t second = kHeaderBytes + kEntryHeaderBytes + 12;
  PutAt<uint32_t>(&bytes, second + kEntryCountAt, 6);  // 5 floats present
  MessageView view;
  Status s = DecodeBytes(bytes, &view);
  CHECK(s.IsCorruption());
  CHECK(s.message() == "entry 1 (key 9) announces 6 fp32 values past the end");

  // A count large enough to overflow a 32-bit byte count.
  bytes = TwoEntryUpdate();
  PutAt<uint32_t>(&bytes, kHeaderBytes + kEntryCountAt, 0x40000001u);
  s = DecodeBytes(bytes, &view);
  CHECK(s.message() == "entry 0 (key 7) announces 1073741825 fp32 values past the end");

  // Read as halves, the second entry's 20 bytes hold 10 values, not 11.
  bytes = EncodeToBytes(UpdateHeader(), {{9, kB.data(), 5, ValueEncoding::kF16}});
  CHECK(bytes.size() == kHeaderBytes + kEntryHeaderBytes + 10);
  PutAt<uint32_t>(&bytes, kHeaderBytes + kEntryCountAt, 6);
  s = DecodeBytes(bytes, &view);
  CHECK(s.message() == "entry 0 (key 9) announces 6 fp16 values past the end");
}

TEST_CASE("Decode refuses more entries than the payload holds") {
  auto bytes = TwoEntryUpdate();
  PutAt<uint32_t>(&bytes, kCountAt, 3);
  MessageView view;
  Status s = DecodeBytes(bytes, &view);
  CHECK(s.IsCorruption());
  CHECK(s.message() == "entry 2 is cut short");
}

TEST_CASE("Decode refuses trailing bytes after the entries") {
  auto bytes = TwoEntryUpdate();
  PutAt<uint32_t>(&bytes, kCountAt, 1);  // the second entry's 32 bytes become trailing
  MessageView view;
  Status s = DecodeBytes(bytes, &view);
  CHECK(s.IsCorruption());
  CHECK(s.message() == "32 trailing bytes after the entries");
}

TEST_CASE("Decode refuses a text message that claims entries") {
  auto bytes = EncodeToBytes({MsgType::kError, 1, 0, 0}, {}, "boom");
  PutAt<uint32_t>(&bytes, kCountAt, 1);
  MessageView view;
  Status s = DecodeBytes(bytes, &view);
  CHECK(s.IsCorruption());
  CHECK(s.message() == "a text message carries no entries");
}

TEST_CASE("every message type has a name") {
  CHECK(std::string(MsgTypeName(MsgType::kGet)) == "get");
  CHECK(std::string(MsgTypeName(MsgType::kUpdate)) == "update");
  CHECK(std::string(MsgTypeName(MsgType::kPut)) == "put");
  CHECK(std::string(MsgTypeName(MsgType::kStats)) == "stats");
  CHECK(std::string(MsgTypeName(MsgType::kShutdown)) == "shutdown");
  CHECK(std::string(MsgTypeName(MsgType::kDone)) == "done");
  CHECK(std::string(MsgTypeName(MsgType::kReply)) == "reply");
  CHECK(std::string(MsgTypeName(MsgType::kError)) == "error");
  CHECK(std::string(MsgTypeName(MsgType::kUpdateGet)) == "update-get");
  CHECK(std::string(MsgTypeName(MsgType::kMetric)) == "metric");
  CHECK(std::string(MsgTypeName(MsgType::kJoin)) == "join");
  CHECK(std::string(MsgTypeName(MsgType::kFeature)) == "feature");
  CHECK(std::string(MsgTypeName(MsgType::kSync)) == "sync");
  CHECK(std::string(MsgTypeName(MsgType::kExchange)) == "exchange");
  CHECK(std::string(MsgTypeName(MsgType::kWait)) == "wait");
  CHECK(std::string(MsgTypeName(MsgType::kTimedOut)) == "timed-out");
  CHECK(std::string(MsgTypeName(MsgType::kStopping)) == "stopping");
  CHECK(CarriesText(MsgType::kStopping));
  CHECK(std::string(MsgTypeName(MsgType::kAlive)) == "alive");
  CHECK(CarriesText(MsgType::kAlive));
  CHECK(std::string(MsgTypeName(MsgType::kBusy)) == "busy");
  CHECK(CarriesText(MsgType::kBusy));
  CHECK(std::string(MsgTypeName(MsgType::kCheckpoint)) == "checkpoint");
  CHECK(std::string(MsgTypeName(static_cast<MsgType>(15))) == "unknown");
}

}  // namespace
}  // namespace shoal
