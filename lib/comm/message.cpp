#include "comm/message.h"

#include <algorithm>
#include <cstring>
#include <iterator>

#include "comm/half.h"

namespace shoal {
namespace {

// The wire is little-endian; so are the machines shoal runs on (x86-64, arm64).
template <typename T>
void Put(unsigned char*& p, T v) {
  std::memcpy(p, &v, sizeof v);
  p += sizeof v;
}

template <typename T>
T Get(const unsigned char*& p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  p += sizeof v;
  return v;
}

// Every message type: its name and what it carries. Decode accepts exactly
// these, and the static_assert below keeps the table whole.
struct MsgTypeInfo {
  MsgType type;
  const char* name;
  bool text;  // UTF-8 text, not entries
};
constexpr MsgTypeInfo kMsgTypes[] = {
    {MsgType::kGet, "get", false},
    {MsgType::kUpdate, "update", false},
    {MsgType::kPut, "put", false},
    {MsgType::kStats, "stats", true},
    {MsgType::kShutdown, "shutdown", false},
    {MsgType::kDone, "done", false},
    {MsgType::kUpdateGet, "update-get", false},
    {MsgType::kMetric, "metric", true},
    {MsgType::kJoin, "join", false},
    {MsgType::kFeature, "feature", false},
    {MsgType::kExchange, "exchange", false},
    {MsgType::kSync, "sync", false},
    {MsgType::kAlive, "alive", true},
    {MsgType::kCheckpoint, "checkpoint", false},
    {MsgType::kReply, "reply", false},
    {MsgType::kError, "error", true},
    {MsgType::kWait, "wait", true},
    {MsgType::kTimedOut, "timed-out", true},
    {MsgType::kStopping, "stopping", true},
    {MsgType::kBusy, "busy", true},
};
static_assert(std::size(kMsgTypes) == kMsgTypeCount,
              "every MsgType has a row in kMsgTypes, and kMsgTypeCount says how many");

constexpr bool TypesDistinct() {
  for (size_t i = 0; i < std::size(kMsgTypes); ++i)
    for (size_t j = i + 1; j < std::size(kMsgTypes); ++j)
      if (kMsgTypes[i].type == kMsgTypes[j].type) return false;
  return true;
}
static_assert(TypesDistinct(), "a MsgType has two rows in kMsgTypes");

const MsgTypeInfo* InfoOf(uint16_t type) {
  for (const auto& info : kMsgTypes)
    if (static_cast<uint16_t>(info.type) == type) return &info;
  return nullptr;
}

bool IsKnownEncoding(uint16_t e) { return e == 0 || e == 1; }

}  // namespace

size_t BytesPerValue(ValueEncoding encoding) { return encoding == ValueEncoding::kF16 ? 2 : 4; }

void CopyValues(const EntryView& e, float* out) {
  if (e.count == 0) return;  // `out` may be null then, which memcpy must not see
  if (e.encoding == ValueEncoding::kF16)
    HalvesToFloats(e.data, e.count, out);
  else
    std::memcpy(out, e.data, 4ull * e.count);
}

void AddValues(const EntryView& e, float* sum) {
  if (e.encoding == ValueEncoding::kF16) {
    float chunk[1024];  // converted a piece at a time: no buffer the size of the entry
    for (uint32_t begin = 0; begin < e.count; begin += 1024) {
      const uint32_t n = std::min<uint32_t>(1024, e.count - begin);
      HalvesToFloats(e.data + 2ull * begin, n, chunk);
      for (uint32_t i = 0; i < n; ++i) sum[begin + i] += chunk[i];
    }
    return;
  }
  for (uint32_t i = 0; i < e.count; ++i) {  // unaligned loads, which the compiler vectorises
    float v;
    std::memcpy(&v, e.data + 4ull * i, 4);
    sum[i] += v;
  }
}

const char* MsgTypeName(MsgType type) {
  const MsgTypeInfo* info = InfoOf(static_cast<uint16_t>(type));
  return info ? info->name : "unknown";
}

bool IsMsgType(uint16_t type) { return InfoOf(type) != nullptr; }

bool CarriesText(MsgType type) {
  const MsgTypeInfo* info = InfoOf(static_cast<uint16_t>(type));
  return info && info->text;
}

size_t EncodedSize(const std::vector<EntryRef>& entries, const std::string& text) {
  size_t n = kHeaderBytes + text.size();
  for (const auto& e : entries) n += kEntryHeaderBytes + e.count * BytesPerValue(e.encoding);
  return n;
}

void Encode(const MsgHeader& h, const std::vector<EntryRef>& entries, const std::string& text,
            unsigned char* out, bool in_place) {
  unsigned char* p = out;
  Put<uint32_t>(p, kMsgMagic);
  Put<uint16_t>(p, kProtocolVersion);
  Put<uint16_t>(p, static_cast<uint16_t>(h.type));
  Put<uint64_t>(p, h.plan_hash);
  Put<uint64_t>(p, h.step);
  Put<uint32_t>(p, h.sender);
  Put<uint32_t>(p, static_cast<uint32_t>(entries.size()));
  Put<uint64_t>(p, EncodedSize(entries, text) - kHeaderBytes);
  Put<uint64_t>(p, h.incarnation);
  for (const auto& e : entries) {
    Put<uint32_t>(p, e.key);
    Put<uint16_t>(p, static_cast<uint16_t>(e.encoding));
    Put<uint16_t>(p, 0);
    Put<uint32_t>(p, e.count);
    if (e.count == 0) continue;  // e.data may be null
    if (e.encoding == ValueEncoding::kF16)
      FloatsToHalves(e.data, e.count, p);
    else if (!(in_place && e.already_at == p))
      std::memcpy(p, e.data, 4ull * e.count);
    p += e.count * BytesPerValue(e.encoding);
  }
  std::memcpy(p, text.data(), text.size());
}

Status Decode(const unsigned char* data, size_t size, MessageView* out) {
  if (size < kHeaderBytes)
    return Status::Corruption("message of " + std::to_string(size) + " bytes is shorter than a header");
  const unsigned char* p = data;
  uint32_t magic = Get<uint32_t>(p);
  if (magic != kMsgMagic) return Status::Corruption("message does not start with shoal's magic");
  uint16_t version = Get<uint16_t>(p);
  if (version != kProtocolVersion)
    return Status::Corruption("protocol version " + std::to_string(version) + ", expected " +
                              std::to_string(kProtocolVersion));
  uint16_t type = Get<uint16_t>(p);
  if (!IsMsgType(type)) return Status::Corruption("unknown message type " + std::to_string(type));
  out->header.type = static_cast<MsgType>(type);
  out->header.plan_hash = Get<uint64_t>(p);
  out->header.step = Get<uint64_t>(p);
  out->header.sender = Get<uint32_t>(p);
  uint32_t count = Get<uint32_t>(p);
  uint64_t payload = Get<uint64_t>(p);
  out->header.incarnation = Get<uint64_t>(p);
  if (payload != size - kHeaderBytes)
    return Status::Corruption("header announces " + std::to_string(payload) +
                              " payload bytes, message carries " + std::to_string(size - kHeaderBytes));
  out->entries.clear();
  out->text.clear();
  const unsigned char* end = data + size;
  if (CarriesText(out->header.type)) {
    if (count != 0) return Status::Corruption("a text message carries no entries");
    out->text.assign(reinterpret_cast<const char*>(p), end - p);
    return Status::Ok();
  }
  // At most as many entries as their headers fit in the bytes present: a
  // header may announce anything.
  if (count > (size - kHeaderBytes) / kEntryHeaderBytes)
    return Status::Corruption("header announces " + std::to_string(count) + " entries; " +
                              std::to_string(size - kHeaderBytes) + " payload bytes hold at most " +
                              std::to_string((size - kHeaderBytes) / kEntryHeaderBytes));
  out->entries.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    if (static_cast<size_t>(end - p) < kEntryHeaderBytes)
      return Status::Corruption("entry " + std::to_string(i) + " is cut short");
    EntryView e;
    e.key = Get<uint32_t>(p);
    const uint16_t encoding = Get<uint16_t>(p);
    const uint16_t zero = Get<uint16_t>(p);
    e.count = Get<uint32_t>(p);
    const std::string entry = "entry " + std::to_string(i) + " (key " + std::to_string(e.key) + ")";
    if (!IsKnownEncoding(encoding))
      return Status::Corruption(entry + " has unknown value encoding " + std::to_string(encoding));
    if (zero != 0) return Status::Corruption(entry + " has " + std::to_string(zero) + " where 0 belongs");
    e.encoding = static_cast<ValueEncoding>(encoding);
    if (static_cast<uint64_t>(end - p) < e.value_bytes())
      return Status::Corruption(entry + " announces " + std::to_string(e.count) + " " +
                                EncodingName(e.encoding) + " values past the end");
    e.data = p;
    p += e.value_bytes();
    out->entries.push_back(e);
  }
  if (p != end) return Status::Corruption(std::to_string(end - p) + " trailing bytes after the entries");
  return Status::Ok();
}

}  // namespace shoal
