#include "data/shard_writer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "core/file_util.h"
#include "core/hash.h"
#include "data/shard_file.h"

namespace shoal {
namespace {

// Uniform in [0, bound) without modulo bias; std::uniform_int_distribution
// is implementation-defined, so it would break reproducibility across builds.
uint64_t UniformBelow(std::mt19937_64& rng, uint64_t bound) {
  const uint64_t reject_below = (0 - bound) % bound;  // 2^64 mod bound
  for (;;) {
    uint64_t r = rng();
    if (r >= reject_below) return r % bound;
  }
}

// Writes `ids`' records of `images` (and their labels) as shard file `name`.
Status WriteShardFile(const ShardSpec& spec, const std::string& name, const Shape& record_shape,
                      const IdxArray& images, const IdxArray& labels, const std::vector<uint64_t>& ids,
                      ShardInfo* info) {
  const size_t record_bytes = static_cast<size_t>(NumElements(record_shape));
  ShardFileWriter writer;
  SHOAL_RETURN_IF_ERROR(writer.Open(spec.out_dir + "/" + name, record_shape, StoredForm::kRaw));
  for (uint64_t id : ids)
    SHOAL_RETURN_IF_ERROR(
        writer.Append(images.bytes.data() + id * record_bytes, record_bytes, labels.bytes[id]));
  return writer.Finish(info);
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

void LimitRecords(IdxArray* records, IdxArray* labels, uint64_t limit) {
  if (records->dims.empty() || static_cast<uint64_t>(records->dims[0]) <= limit) return;
  const size_t each = records->bytes.size() / static_cast<size_t>(records->dims[0]);
  records->dims[0] = static_cast<int>(limit);
  records->bytes.resize(each * limit);
  labels->dims[0] = static_cast<int>(limit);
  labels->bytes.resize(limit);
}

std::vector<uint64_t> ShuffledOrder(uint64_t n, uint64_t seed) {
  std::vector<uint64_t> order(n);
  for (uint64_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937_64 rng(seed);
  for (uint64_t i = n; i > 1; --i) std::swap(order[i - 1], order[UniformBelow(rng, i)]);
  return order;
}

namespace {

// Deals the train records to the shards, and the held-out ones to `val`.
// Dealt like cards: shuffled record i goes to shard i mod N. Contiguous:
// shard k takes records k·m up to (k + 1)·m, m = n ÷ N, in order (the last
// n mod N are left out: equal shards cut into equal streams, so that
// workers and one worker over the same shards read the same streams).
std::vector<std::vector<uint64_t>> Deal(const ShardSpec& spec, uint64_t n, std::vector<uint64_t>* val) {
  const uint64_t shards = static_cast<uint64_t>(spec.shards);
  const uint64_t held = static_cast<uint64_t>(std::ceil(spec.val_fraction * static_cast<double>(n)));
  const uint64_t kept = n - std::min(held, n);
  std::vector<std::vector<uint64_t>> dealt(shards);
  if (spec.contiguous) {
    for (uint64_t i = 0; i < kept / shards * shards; ++i) dealt[i / (kept / shards)].push_back(i);
    for (uint64_t i = kept; i < n; ++i) val->push_back(i);
    return dealt;
  }
  const std::vector<uint64_t> order = ShuffledOrder(n, spec.seed);
  for (uint64_t i = 0; i < kept; ++i) dealt[i % shards].push_back(order[i]);
  val->assign(order.begin() + static_cast<std::ptrdiff_t>(kept), order.end());
  return dealt;
}

}  // namespace

Status WriteShards(const ShardSpec& spec, Manifest* manifest) {
  SHOAL_RETURN_IF_ERROR(CheckPair("train", spec.train_images, spec.train_labels));
  SHOAL_RETURN_IF_ERROR(CheckPair("test", spec.test_images, spec.test_labels));
  const std::vector<int> record(spec.train_images.dims.begin() + 1, spec.train_images.dims.end());
  if (record != std::vector<int>(spec.test_images.dims.begin() + 1, spec.test_images.dims.end()))
    return Status::InvalidArgument(
        "train records are " + ShapeToString(Shape(record.begin(), record.end())) + " but test records are " +
        ShapeToString(Shape(spec.test_images.dims.begin() + 1, spec.test_images.dims.end())));
  const uint64_t n = static_cast<uint64_t>(spec.train_images.dims[0]);
  if (!(spec.val_fraction >= 0.0 && spec.val_fraction < 1.0))
    return Status::InvalidArgument("the validation fraction must be in [0, 1), not " +
                                   std::to_string(spec.val_fraction));
  const uint64_t kept = n - std::min<uint64_t>(n, static_cast<uint64_t>(std::ceil(spec.val_fraction * n)));
  if (spec.shards < 1 || static_cast<uint64_t>(spec.shards) > kept)
    return Status::InvalidArgument("shards must be in 1.." + std::to_string(kept) +
                                   " (one record per shard at least), got " + std::to_string(spec.shards));
  if (spec.dataset.empty()) return Status::InvalidArgument("dataset name is empty");

  Manifest m;
  m.dataset = spec.dataset;
  // An image is one channel; a text's window a vector of symbols.
  m.record_shape = record.size() == 2 ? Shape{1, record[0], record[1]} : Shape{record[0]};
  m.seed = spec.seed;
  m.vocabulary = spec.vocabulary;
  m.contiguous = spec.contiguous;
  int max_label = 0;
  for (uint8_t l : spec.train_labels.bytes) max_label = std::max<int>(max_label, l);
  for (uint8_t l : spec.test_labels.bytes) max_label = std::max<int>(max_label, l);
  // Labels are u8, so classes <= 256; a text's records are its labels: one class a symbol.
  m.classes = m.vocabulary.empty() ? max_label + 1 : static_cast<int>(m.vocabulary.size());
  if (spec.class_names.size() == static_cast<size_t>(m.classes)) m.class_names = spec.class_names;
  if (m.vocabulary.empty()) {  // an image's pixels, scaled to [0, 1]: one channel
    double sum = 0.0, squares = 0.0;
    for (uint8_t p : spec.train_images.bytes) sum += p, squares += static_cast<double>(p) * p;
    const double count = static_cast<double>(std::max<size_t>(spec.train_images.bytes.size(), 1));
    const double mean = sum / count / 255.0;
    m.mean = {mean};
    m.std = {std::sqrt(std::max(0.0, squares / count / (255.0 * 255.0) - mean * mean))};
  }
  std::vector<uint64_t> val;
  const std::vector<std::vector<uint64_t>> dealt = Deal(spec, n, &val);
  for (size_t k = 0; k < dealt.size(); ++k) {
    char name[40];  // room for any 64-bit shard number
    std::snprintf(name, sizeof name, "train-%05llu.shard", static_cast<unsigned long long>(k));
    ShardInfo info;
    SHOAL_RETURN_IF_ERROR(
        WriteShardFile(spec, name, m.record_shape, spec.train_images, spec.train_labels, dealt[k], &info));
    m.train.push_back(info);
  }
  if (!val.empty()) {
    m.val.emplace();
    SHOAL_RETURN_IF_ERROR(WriteShardFile(spec, "val.shard", m.record_shape, spec.train_images,
                                         spec.train_labels, val, &*m.val));
  }
  // The test set stays in its published order so evaluations compare across runs.
  std::vector<uint64_t> test_ids(static_cast<uint64_t>(spec.test_images.dims[0]));
  for (uint64_t i = 0; i < test_ids.size(); ++i) test_ids[i] = i;
  SHOAL_RETURN_IF_ERROR(WriteShardFile(spec, "test.shard", m.record_shape, spec.test_images, spec.test_labels,
                                       test_ids, &m.test));
  // Last, so a directory with a manifest holds every shard it names.
  SHOAL_RETURN_IF_ERROR(WriteManifest(spec.out_dir, m));
  *manifest = std::move(m);
  return Status::Ok();
}

}  // namespace shoal
