// Tests for lib/train/batch_loader over a small shard directory written by
// lib/data/shard_writer: the first pass in whole dealt batches, in an order
// of its own seed's, later passes reshuffled by the seed, where a loader begins, a bad record's
// error, and ShardScanner reading a shard once.
#include "train/batch_loader.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/file_util.h"
#include "data/shard.h"
#include "data/shard_writer.h"
#include "test_util.h"

namespace shoal {
namespace {

// 10 train records of 2×3 pixels: record r's pixels are r·10 + p, its label
// r mod 4, so every record is recognisable after shuffling; dealt to 3
// shards of 4, 3 and 3 records. 4 test records, in order.
ShardSpec SmallSpec(const std::string& dir, uint64_t seed) {
  ShardSpec spec;
  spec.dataset = "synthetic";
  spec.out_dir = dir;
  spec.shards = 3;
  spec.seed = seed;
  std::vector<uint8_t> pixels, labels;
  for (int r = 0; r < 10; ++r) {
    for (int p = 0; p < 6; ++p) pixels.push_back(static_cast<uint8_t>(r * 10 + p));
    labels.push_back(static_cast<uint8_t>(r % 4));
  }
  spec.train_images = IdxArray{{10, 2, 3}, pixels};
  spec.train_labels = IdxArray{{10}, labels};
  spec.test_images = IdxArray{{4, 2, 3}, std::vector<uint8_t>(pixels.begin(), pixels.begin() + 24)};
  spec.test_labels = IdxArray{{4}, std::vector<uint8_t>(labels.begin(), labels.begin() + 4)};
  return spec;
}

constexpr uint64_t kDealSeed = 42;

// Which train record a read-back record is, from its first pixel.
int RecordId(const float* pixels) { return static_cast<int>(pixels[0] * 255.0f + 0.5f) / 10; }

struct Shards {
  TempDir dir;
  Manifest manifest;
  Shards() {
    Status s = WriteShards(SmallSpec(dir.path, kDealSeed), &manifest);
    INFO(s.ToString());
    REQUIRE(s.ok());
    REQUIRE(manifest.train.size() == 3);
  }
  std::string Path(size_t k) const { return dir.path + "/" + manifest.train[k].file; }
  // Readers of the given shards, in that order.
  std::vector<std::unique_ptr<ShardReader>> Open(const std::vector<size_t>& which) const {
    std::vector<std::unique_ptr<ShardReader>> readers;
    for (size_t k : which) {
      readers.push_back(std::make_unique<ShardReader>());
      Status s = readers.back()->Open(Path(k));
      INFO(s.ToString());
      REQUIRE(s.ok());
    }
    return readers;
  }
  // The record ids of the shards read one after the other: shard k's record
  // j is dealt record j·3 + k.
  std::vector<int> Sequence(const std::vector<size_t>& which) const {
    const std::vector<uint64_t> order = ShuffledOrder(10, kDealSeed);
    std::vector<int> ids;
    for (size_t k : which)
      for (uint64_t j = 0; j < manifest.train[k].records; ++j)
        ids.push_back(static_cast<int>(order[j * 3 + k]));
    return ids;
  }
};

// The record ids of a batch, checking each record's pixels and label whole.
std::vector<int> Ids(const Batch& b) {
  std::vector<int> ids;
  REQUIRE(b.pixels.size() == static_cast<size_t>(b.size) * 6);
  REQUIRE(b.labels.size() == static_cast<size_t>(b.size));
  for (int i = 0; i < b.size; ++i) {
    const float* pixels = b.pixels.data() + i * 6;
    const int id = RecordId(pixels);
    for (int p = 0; p < 6; ++p) CHECK(pixels[p] == doctest::Approx((id * 10 + p) / 255.0f));
    CHECK(b.labels[i] == id % 4);
    ids.push_back(id);
  }
  return ids;
}

// The next `n` batches' record ids, one after the other.
// A loader of raw records as these tests build it, its options given in order.
std::unique_ptr<BatchLoader> Loader(std::vector<std::unique_ptr<ShardReader>> shards, int batch,
                                    uint64_t seed, uint64_t first_record = 0, int depth = 4,
                                    uint64_t first_pass_seed = 0, bool streams = false,
                                    uint64_t first_pass_batches = UINT64_MAX, int threads = 1) {
  const RecordFeed feed(nullptr, shards.empty() ? 0 : NumElements(shards[0]->record_shape()));
  LoaderOptions o;
  o.batch = batch;
  o.seed = seed;
  o.first_record = first_record;
  o.depth = depth;
  o.first_pass_seed = first_pass_seed;
  o.streams = streams;
  o.first_pass_batches = first_pass_batches;
  o.threads = threads;
  return std::make_unique<BatchLoader>(std::move(shards), feed, o);
}

// A raw shard's records as floats, as evaluation reads them.
RecordFeed Floats(const ShardReader& reader) {
  return RecordFeed(nullptr, NumElements(reader.record_shape()));
}

std::vector<int> Take(BatchLoader* loader, int n) {
  std::vector<int> ids;
  Batch b;  // one, handed back each time: the loader refills its buffers
  for (int i = 0; i < n; ++i) {
    Status s = loader->Next(&b);
    INFO("batch " << i << ": " << s.ToString());
    REQUIRE(s.ok());
    const std::vector<int> got = Ids(b);
    ids.insert(ids.end(), got.begin(), got.end());
  }
  return ids;
}

// What the loader takes at position `at` (over all passes) of `sequence`
// with batches of `batch`: in pass 0 the first min(n / batch,
// first_pass_batches) whole batches in the order ShuffledOrder(that count,
// first_pass_seed·1000003 + 17), the rest as dealt; pass p's order is
// ShuffledOrder(n, seed·1000003 + p).
int Expected(const std::vector<int>& sequence, uint64_t seed, uint64_t at, uint64_t batch,
             uint64_t first_pass_seed = 0, uint64_t first_pass_batches = UINT64_MAX) {
  const uint64_t n = sequence.size(), pass = at / n, i = at % n;
  if (pass == 0) {
    const std::vector<uint64_t> batches =
        ShuffledOrder(std::min(n / batch, first_pass_batches), first_pass_seed * 1000003 + 17);
    return i / batch < batches.size() ? sequence[batches[i / batch] * batch + i % batch] : sequence[i];
  }
  return sequence[ShuffledOrder(n, seed * 1000003 + pass)[i]];
}

TEST_CASE("batch loader: the first pass takes whole dealt batches in an order of its own seed's") {
  Shards shards;
  const std::vector<int> sequence = shards.Sequence({0, 1, 2});
  for (uint64_t first_pass_seed : {0ull, 1ull, 2ull}) {
    INFO("first pass seed " << first_pass_seed);
    auto loader = Loader(shards.Open({0, 1, 2}), 3, 7, 0, 4, first_pass_seed);
    CHECK(loader->records() == 10);
    const std::vector<int> ids = Take(loader.get(), 3);
    for (uint64_t at = 0; at < 9; ++at) CHECK(ids[at] == Expected(sequence, 7, at, 3, first_pass_seed));
  }
  // The batch order is the seed's: 5 batches of 2 come in another order for another seed.
  auto a = Loader(shards.Open({0, 1, 2}), 2, 7, 0, 4, 1), b = Loader(shards.Open({0, 1, 2}), 2, 7, 0, 4, 2);
  REQUIRE(ShuffledOrder(5, 1 * 1000003 + 17) != ShuffledOrder(5, 2 * 1000003 + 17));
  CHECK(Take(a.get(), 5) != Take(b.get(), 5));
}

TEST_CASE("batch loader: the first pass shuffles the job's count of whole batches, the rest in order") {
  // Every worker shuffles the job's count (its records ÷ (W·B)), so one whose
  // shard holds a batch more than the others' shuffles what they do (the
  // worker passes it; here each count, up to more than the loader holds).
  Shards shards;
  const std::vector<int> sequence = shards.Sequence({0, 1, 2});  // 10 records
  for (uint64_t count : {1ull, 2ull, 4ull, 100ull}) {
    INFO("first-pass batches " << count);
    auto loader = Loader(shards.Open({0, 1, 2}), 3, 7, 0, 4, 5, false, count);
    const std::vector<int> ids = Take(loader.get(), 3);
    for (uint64_t at = 0; at < 9; ++at) CHECK(ids[at] == Expected(sequence, 7, at, 3, 5, count));
  }
  // Fewer batches shuffled than it holds: the others come in dealt order after them.
  auto one = Loader(shards.Open({0, 1, 2}), 3, 7, 0, 4, 5, false, 1);
  const std::vector<int> ids = Take(one.get(), 3);
  CHECK(std::vector<int>(ids.begin() + 3, ids.begin() + 9) ==
        std::vector<int>(sequence.begin() + 3, sequence.begin() + 9));
}

TEST_CASE("batch loader: the shards are read in the order given, a batch as large as the pass as dealt") {
  Shards shards;
  auto loader = Loader(shards.Open({2, 0}), 7, 7);
  CHECK(loader->records() == 7);
  CHECK(Take(loader.get(), 1) == shards.Sequence({2, 0}));
}

TEST_CASE("batch loader: later passes are permutations of the records, drawn from the seed and the pass") {
  Shards shards;
  const std::vector<int> sequence = shards.Sequence({0, 1, 2});
  // Batches of 4 straddle the passes: 10 records per pass, 40 records = 4 passes.
  auto loader = Loader(shards.Open({0, 1, 2}), 4, 7);
  const std::vector<int> ids = Take(loader.get(), 10);
  REQUIRE(ids.size() == 40);
  for (uint64_t at = 0; at < 40; ++at) {
    INFO("record " << at);
    CHECK(ids[at] == Expected(sequence, 7, at, 4));
  }
  const std::multiset<int> all(sequence.begin(), sequence.end());
  std::vector<std::vector<int>> passes;
  for (int p = 0; p < 4; ++p) {
    passes.emplace_back(ids.begin() + 10 * p, ids.begin() + 10 * (p + 1));
    INFO("pass " << p);
    CHECK(std::multiset<int>(passes.back().begin(), passes.back().end()) == all);
  }
  // Reshuffled: pass 1 is neither the dealt order nor pass 2's.
  CHECK(passes[1] != passes[0]);
  CHECK(passes[1] != passes[2]);
}

TEST_CASE(
    "batch loader: the same seed repeats the passes; another seed gives another order after the first") {
  Shards shards;
  auto a = Loader(shards.Open({0, 1, 2}), 5, 11), b = Loader(shards.Open({0, 1, 2}), 5, 11),
       c = Loader(shards.Open({0, 1, 2}), 5, 12);
  const std::vector<int> ia = Take(a.get(), 6), ib = Take(b.get(), 6), ic = Take(c.get(), 6);
  CHECK(ia == ib);
  // The first pass's order is its own seed's (here the default), whatever the later passes'.
  CHECK(std::vector<int>(ia.begin(), ia.begin() + 10) == std::vector<int>(ic.begin(), ic.begin() + 10));
  REQUIRE(ShuffledOrder(10, 11 * 1000003 + 1) != ShuffledOrder(10, 12 * 1000003 + 1));
  CHECK(std::vector<int>(ia.begin() + 10, ia.begin() + 20) !=
        std::vector<int>(ic.begin() + 10, ic.begin() + 20));
}

TEST_CASE("batch loader: first_record starts exactly there in the sequence over all passes") {
  Shards shards;
  const std::vector<int> sequence = shards.Sequence({0, 1, 2});
  for (uint64_t first : {0ull, 3ull, 10ull, 13ull, 27ull}) {
    INFO("first_record " << first);
    auto loader = Loader(shards.Open({0, 1, 2}), 3, 5, first);
    const std::vector<int> ids = Take(loader.get(), 4);
    for (uint64_t i = 0; i < ids.size(); ++i) {
      INFO("record " << first + i);
      CHECK(ids[i] == Expected(sequence, 5, first + i, 3));
    }
  }
  // Beginning at 13 gives what an uninterrupted loader gives from its 14th record.
  auto whole = Loader(shards.Open({0, 1, 2}), 1, 5), resumed = Loader(shards.Open({0, 1, 2}), 1, 5, 13);
  // (with batches of one, the first pass's order is a shuffle of the records themselves)
  const std::vector<int> all = Take(whole.get(), 25);
  CHECK(Take(resumed.get(), 12) == std::vector<int>(all.begin() + 13, all.end()));
}

TEST_CASE("batch loader: a bad record's error comes through Next, after the batches before it") {
  Shards shards;
  // Flip a pixel of shard 1's last record (record 2): sequence position 4 + 2 = 6.
  std::string bytes;
  REQUIRE(ReadFile(shards.Path(1), &bytes).ok());
  const size_t header = 8 + 4 + 4 + 8 + 4 + 3 * 4 + 4, stride = 6 + 4 + 4;
  REQUIRE(bytes.size() == header + 3 * stride);
  bytes[header + 2 * stride + 1] ^= 0x40;
  REQUIRE(WriteFileAtomic(shards.Path(1), bytes).ok());

  // Batches of 5: the first pass takes the dealt batches [0, 5) and [5, 10)
  // in its seed's order; the bad record is in the second.
  const std::vector<uint64_t> batches = ShuffledOrder(2, 0 * 1000003 + 17);
  auto loader = Loader(shards.Open({0, 1, 2}), 5, 7);
  Batch b;
  Status s;
  if (batches[0] == 0) {
    s = loader->Next(&b);  // the good batch first
    INFO(s.ToString());
    REQUIRE(s.ok());
    CHECK(b.size == 5);
  }
  s = loader->Next(&b);  // the batch with the bad record
  CHECK(s.IsCorruption());
  CHECK(Contains(s.message(), shards.Path(1)));
  CHECK(Contains(s.message(), "record 2"));
  CHECK(Contains(s.message(), "checksum mismatch"));
  // And again: the loader stops there.
  Status again = loader->Next(&b);
  CHECK(again.IsCorruption());
  CHECK(again.message() == s.message());
}

TEST_CASE("batch loader: no shards, or shards of no records, is an error from Next, not a hang") {
  auto loader = Loader({}, 4, 1);
  CHECK(loader->records() == 0);
  Batch b;
  Status s = loader->Next(&b);
  CHECK(s.IsInvalidArgument());
  CHECK(s.message() == "the shards hold no records");
}

TEST_CASE("contiguous shards hold stretches of the records in order; the loader reads them as streams") {
  TempDir dir;
  ShardSpec spec = SmallSpec(dir.path, kDealSeed);
  spec.contiguous = true;
  Manifest written, read;
  REQUIRE(WriteShards(spec, &written).ok());
  REQUIRE(LoadManifest(dir.path, &read).ok());
  CHECK(read.contiguous);
  std::vector<std::unique_ptr<ShardReader>> readers;
  std::vector<uint64_t> sizes;
  for (const ShardInfo& info : read.train) {
    readers.push_back(std::make_unique<ShardReader>());
    REQUIRE(readers.back()->Open(dir.path + "/" + info.file).ok());
    sizes.push_back(info.records);
  }
  CHECK(sizes == std::vector<uint64_t>{3, 3, 3});  // records 0-2, 3-5, 6-8 (record 9 left out)
  // 3 streams of 3 records, one a shard: batch t holds t, 3 + t, 6 + t.
  auto loader = Loader(std::move(readers), 3, 7, 0, 4, 0, /*streams=*/true);
  std::vector<bool> starts;
  std::vector<int> ids;
  for (int t = 0; t < 5; ++t) {
    Batch b;
    REQUIRE(loader->Next(&b).ok());
    starts.push_back(b.stream_start);
    const std::vector<int> got = Ids(b);
    ids.insert(ids.end(), got.begin(), got.end());
  }
  CHECK(ids == std::vector<int>{0, 3, 6, 1, 4, 7, 2, 5, 8, 0, 3, 6, 1, 4, 7});
  CHECK(starts == std::vector<bool>{true, false, false, true, false});
  // A loader that begins at step 4 (first_record 12) is at record 1 of every stream.
  std::vector<std::unique_ptr<ShardReader>> again;
  for (const ShardInfo& info : read.train) {
    again.push_back(std::make_unique<ShardReader>());
    REQUIRE(again.back()->Open(dir.path + "/" + info.file).ok());
  }
  auto resumed = Loader(std::move(again), 3, 7, 12, 4, 0, /*streams=*/true);
  CHECK(Take(resumed.get(), 1) == std::vector<int>{1, 4, 7});
  // Streams are spread evenly over the shards: 4 do not divide over 3.
  std::vector<std::unique_ptr<ShardReader>> uneven;
  for (const ShardInfo& info : read.train) {
    uneven.push_back(std::make_unique<ShardReader>());
    REQUIRE(uneven.back()->Open(dir.path + "/" + info.file).ok());
  }
  auto four = Loader(std::move(uneven), 4, 7, 0, 4, 0, /*streams=*/true);
  Batch b;
  const Status refused = four->Next(&b);
  CHECK(refused.message().find("a batch of 4 streams does not divide over the 3 shards") !=
        std::string::npos);
}

TEST_CASE("shard scanner: reads every record of a shard once, in order, in batches of at most its size") {
  Shards shards;
  ShardReader test;
  REQUIRE(test.Open(shards.dir.path + "/test.shard").ok());
  ShardScanner scanner(&test, 3, Floats(test));
  std::vector<int> sizes, ids;
  for (int i = 0; i < 5; ++i) {
    Batch b;
    Status s = scanner.Next(&b);
    INFO(s.ToString());
    REQUIRE(s.ok());
    sizes.push_back(b.size);
    if (b.size == 0) break;
    const std::vector<int> got = Ids(b);
    ids.insert(ids.end(), got.begin(), got.end());
  }
  CHECK(sizes == std::vector<int>{3, 1, 0});
  CHECK(ids == std::vector<int>{0, 1, 2, 3});  // the test set keeps its order

  ShardReader train;
  REQUIRE(train.Open(shards.Path(0)).ok());
  ShardScanner whole(&train, 100, Floats(train));
  Batch b;
  REQUIRE(whole.Next(&b).ok());
  CHECK(b.size == 4);
  CHECK(Ids(b) == shards.Sequence({0}));
  REQUIRE(whole.Next(&b).ok());
  CHECK(b.size == 0);
  CHECK(b.pixels.empty());
  CHECK(b.labels.empty());
}

TEST_CASE("shard scanner: a bad record's error names the file and the record") {
  Shards shards;
  std::string bytes;
  REQUIRE(ReadFile(shards.Path(0), &bytes).ok());
  const size_t header = 8 + 4 + 4 + 8 + 4 + 3 * 4 + 4, stride = 6 + 4 + 4;
  bytes[header + 1 * stride + 2] ^= 0x01;  // record 1
  REQUIRE(WriteFileAtomic(shards.Path(0), bytes).ok());
  ShardReader reader;
  REQUIRE(reader.Open(shards.Path(0)).ok());
  ShardScanner scanner(&reader, 4, Floats(reader));
  Batch b;
  Status s = scanner.Next(&b);
  CHECK(s.IsCorruption());
  CHECK(Contains(s.message(), shards.Path(0)));
  CHECK(Contains(s.message(), "record 1"));
}

}  // namespace
}  // namespace shoal
