#include "data/shard_writer.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "core/build_info.h"
#include "core/file_util.h"
#include "core/hash.h"

namespace shoal {
namespace {

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutU64(std::string* out, uint64_t v) {
  PutU32(out, static_cast<uint32_t>(v));
  PutU32(out, static_cast<uint32_t>(v >> 32));
}

// Uniform in [0, bound) without modulo bias; std::uniform_int_distribution
// is implementation-defined, so it would break reproducibility across builds.
uint64_t UniformBelow(std::mt19937_64& rng, uint64_t bound) {
  const uint64_t reject_below = (0 - bound) % bound;  // 2^64 mod bound
  for (;;) {
    uint64_t r = rng();
    if (r >= reject_below) return r % bound;
  }
}

// Encodes one shard file in memory: header, then `ids` records in order.
std::string EncodeShard(const Shape& record_shape, const IdxArray& images, const IdxArray& labels,
                        const std::vector<uint64_t>& ids) {
  const uint32_t record_bytes = static_cast<uint32_t>(NumElements(record_shape));
  std::string out;
  out.reserve(8 + 24 + 4 * record_shape.size() + ids.size() * (record_bytes + 8));
  out.append(kShardMagic, sizeof kShardMagic);
  PutU32(&out, kShardVersion);
  PutU32(&out, record_bytes);
  PutU64(&out, ids.size());
  PutU32(&out, static_cast<uint32_t>(record_shape.size()));
  for (int d : record_shape) PutU32(&out, static_cast<uint32_t>(d));
  PutU32(&out, Crc32(out.data(), out.size()));
  for (uint64_t id : ids) {
    const size_t start = out.size();
    out.append(reinterpret_cast<const char*>(images.bytes.data()) + id * record_bytes, record_bytes);
    PutU32(&out, labels.bytes[id]);
    PutU32(&out, Crc32(out.data() + start, record_bytes + 4));
  }
  return out;
}

Status WriteShardFile(const ShardSpec& spec, const std::string& name, const Shape& record_shape,
                      const IdxArray& images, const IdxArray& labels, const std::vector<uint64_t>& ids,
                      ShardInfo* info) {
  std::string bytes = EncodeShard(record_shape, images, labels, ids);
  SHOAL_RETURN_IF_ERROR(WriteFileAtomic(spec.out_dir + "/" + name, bytes));
  info->file = name;
  info->records = ids.size();
  info->fnv1a64 = HexU64(Fnv1a64(bytes));
  return Status::Ok();
}

// Records are [n, rows, cols] images or [n, symbols] windows of a text, with
// n labels beside them.
Status CheckPair(const char* which, const IdxArray& images, const IdxArray& labels) {
  const std::string set = which;
  if (images.dims.size() != 2 && images.dims.size() != 3)
    return Status::InvalidArgument(
        set + " records: expected 3 dims [count, rows, cols] or 2 [count, symbols], got " +
        std::to_string(images.dims.size()));
  if (labels.dims.size() != 1)
    return Status::InvalidArgument(set + " labels: expected 1 dim [count], got " +
                                   std::to_string(labels.dims.size()));
  if (images.dims[0] != labels.dims[0])
    return Status::InvalidArgument(set + ": " + std::to_string(images.dims[0]) + " images but " +
                                   std::to_string(labels.dims[0]) + " labels");
  if (images.bytes.size() != NumElements(images.dims) || labels.bytes.size() != NumElements(labels.dims))
    return Status::InvalidArgument(set + ": data length does not match dims");
  return Status::Ok();
}

}  // namespace

std::vector<uint64_t> ShuffledOrder(uint64_t n, uint64_t seed) {
  std::vector<uint64_t> order(n);
  for (uint64_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937_64 rng(seed);
  for (uint64_t i = n; i > 1; --i) std::swap(order[i - 1], order[UniformBelow(rng, i)]);
  return order;
}

Status WriteShards(const ShardSpec& spec, Manifest* manifest) {
  SHOAL_RETURN_IF_ERROR(CheckPair("train", spec.train_images, spec.train_labels));
  SHOAL_RETURN_IF_ERROR(CheckPair("test", spec.test_images, spec.test_labels));
  const std::vector<int> record(spec.train_images.dims.begin() + 1, spec.train_images.dims.end());
  if (record != std::vector<int>(spec.test_images.dims.begin() + 1, spec.test_images.dims.end()))
    return Status::InvalidArgument(
        "train records are " + ShapeToString(Shape(record.begin(), record.end())) + " but test records are " +
        ShapeToString(Shape(spec.test_images.dims.begin() + 1, spec.test_images.dims.end())));
  const uint64_t n = static_cast<uint64_t>(spec.train_images.dims[0]);
  if (spec.shards < 1 || static_cast<uint64_t>(spec.shards) > n)
    return Status::InvalidArgument("shards must be in 1.." + std::to_string(n) +
                                   " (one record per shard at least), got " + std::to_string(spec.shards));
  if (spec.dataset.empty()) return Status::InvalidArgument("dataset name is empty");

  Manifest m;
  m.dataset = spec.dataset;
  // An image is one channel; a text's window a vector of symbols.
  m.record_shape = record.size() == 2 ? Shape{1, record[0], record[1]} : Shape{record[0]};
  m.seed = spec.seed;
  m.vocabulary = spec.vocabulary;
  int max_label = 0;
  for (uint8_t l : spec.train_labels.bytes) max_label = std::max<int>(max_label, l);
  for (uint8_t l : spec.test_labels.bytes) max_label = std::max<int>(max_label, l);
  // Labels are u8, so classes <= 256; a text's records are its labels: one class a symbol.
  m.classes = m.vocabulary.empty() ? max_label + 1 : static_cast<int>(m.vocabulary.size());

  // Deal like cards: shuffled record i goes to shard i mod N. Contiguous:
  // shard k takes records k·m up to (k + 1)·m, m = n ÷ N, in order (the last
  // n mod N are left out: equal shards cut into equal streams, so that
  // workers and one worker over the same shards read the same streams).
  const uint64_t shards = static_cast<uint64_t>(spec.shards);
  m.contiguous = spec.contiguous;
  std::vector<std::vector<uint64_t>> dealt(shards);
  if (spec.contiguous) {
    for (uint64_t i = 0; i < n / shards * shards; ++i) dealt[i / (n / shards)].push_back(i);
  } else {
    const std::vector<uint64_t> order = ShuffledOrder(n, spec.seed);
    for (uint64_t i = 0; i < n; ++i) dealt[i % shards].push_back(order[i]);
  }
  for (uint64_t k = 0; k < shards; ++k) {
    char name[40];  // room for any 64-bit shard number
    std::snprintf(name, sizeof name, "train-%05llu.shard", static_cast<unsigned long long>(k));
    ShardInfo info;
    SHOAL_RETURN_IF_ERROR(
        WriteShardFile(spec, name, m.record_shape, spec.train_images, spec.train_labels, dealt[k], &info));
    m.train.push_back(info);
  }
  // The test set stays in its published order so evaluations compare across runs.
  std::vector<uint64_t> test_ids(static_cast<uint64_t>(spec.test_images.dims[0]));
  for (uint64_t i = 0; i < test_ids.size(); ++i) test_ids[i] = i;
  SHOAL_RETURN_IF_ERROR(WriteShardFile(spec, "test.shard", m.record_shape, spec.test_images, spec.test_labels,
                                       test_ids, &m.test));

  nlohmann::ordered_json j;
  j["format"] = kManifestFormat;
  j["version"] = kManifestVersion;
  j["dataset"] = m.dataset;
  j["record_shape"] = m.record_shape;
  j["classes"] = m.classes;
  if (!m.vocabulary.empty()) j["vocabulary"] = m.vocabulary;
  j["seed"] = m.seed;
  if (m.contiguous) j["order"] = "contiguous";
  j["shards"] = m.train.size();
  uint64_t dealt_records = 0;
  for (const auto& d : dealt) dealt_records += d.size();
  j["train_records"] = dealt_records;
  j["train"] = nlohmann::ordered_json::array();
  for (const ShardInfo& s : m.train)
    j["train"].push_back({{"file", s.file}, {"records", s.records}, {"fnv1a64", s.fnv1a64}});
  j["test"] = {{"file", m.test.file}, {"records", m.test.records}, {"fnv1a64", m.test.fnv1a64}};
  j["created_by"] = BuildCommit();
  // Last, so a directory with a manifest holds every shard it names.
  SHOAL_RETURN_IF_ERROR(WriteFileAtomic(spec.out_dir + "/manifest.json", j.dump(2) + "\n"));
  *manifest = std::move(m);
  return Status::Ok();
}

}  // namespace shoal
