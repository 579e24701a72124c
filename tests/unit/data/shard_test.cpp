// Tests for lib/data: idx parsing, shard writing and reading, the manifest.
#include "data/shard.h"

#include <doctest/doctest.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/file_util.h"
#include "core/hash.h"
#include "data/idx.h"
#include "data/shard_writer.h"
#include "test_util.h"

namespace shoal {
namespace {

IdxArray Array(std::vector<int> dims, std::vector<uint8_t> bytes) { return IdxArray{dims, bytes}; }

// 10 train records of 2x3 pixels: record r's pixels are r*10+p, label r % 4,
// so every record is recognisable after shuffling. 4 test records likewise.
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
  spec.train_images = Array({10, 2, 3}, pixels);
  spec.train_labels = Array({10}, labels);
  spec.test_images = Array({4, 2, 3}, std::vector<uint8_t>(pixels.begin(), pixels.begin() + 24));
  spec.test_labels = Array({4}, std::vector<uint8_t>(labels.begin(), labels.begin() + 4));
  return spec;
}

// Which train record a read-back record is, from its first pixel.
int RecordId(const float* pixels) { return static_cast<int>(pixels[0] * 255.0f + 0.5f) / 10; }

std::string Slurp(const std::string& path) {
  std::string s;
  REQUIRE(ReadFile(path, &s).ok());
  return s;
}

}  // namespace

TEST_CASE("shard: shuffle is a reproducible permutation") {
  std::vector<uint64_t> a = ShuffledOrder(1000, 7), b = ShuffledOrder(1000, 7), c = ShuffledOrder(1000, 8);
  CHECK(a == b);
  CHECK(a != c);
  CHECK(std::set<uint64_t>(a.begin(), a.end()).size() == 1000);
  // Pinned so a change to the shuffle (which would reshuffle every dataset) is noticed.
  CHECK(ShuffledOrder(8, 1) == std::vector<uint64_t>{4, 6, 3, 5, 1, 7, 2, 0});
}

TEST_CASE("shard: round trip deals every record once, by the dealing rule") {
  TempDir tmp;
  ShardSpec spec = SmallSpec(tmp.path, 42);
  Manifest written;
  Status s = WriteShards(spec, &written);
  REQUIRE_MESSAGE(s.ok(), s.ToString());

  Manifest m;
  s = LoadManifest(tmp.path, &m);
  REQUIRE_MESSAGE(s.ok(), s.ToString());
  CHECK(m.dataset == "synthetic");
  CHECK(m.record_shape == Shape{1, 2, 3});
  CHECK(m.classes == 4);
  CHECK(m.seed == 42);
  REQUIRE(m.train.size() == 3);
  CHECK(m.train[0].file == "train-00000.shard");
  CHECK(m.train[0].records == 4);  // 10 records dealt to 3 shards: 4, 3, 3
  CHECK(m.train[1].records == 3);
  CHECK(m.train[2].records == 3);
  CHECK(m.test.records == 4);
  CHECK(m.train[1].fnv1a64 == written.train[1].fnv1a64);

  const std::vector<uint64_t> order = ShuffledOrder(10, 42);
  std::multiset<int> seen;
  float pixels[6];
  int32_t label;
  for (int k = 0; k < 3; ++k) {
    ShardReader reader;
    s = reader.Open(tmp.path + "/" + m.train[k].file);
    REQUIRE_MESSAGE(s.ok(), s.ToString());
    CHECK(reader.record_shape() == Shape{1, 2, 3});
    REQUIRE(reader.records() == m.train[k].records);
    for (uint64_t j = 0; j < reader.records(); ++j) {
      s = reader.Read(j, pixels, &label);
      REQUIRE_MESSAGE(s.ok(), s.ToString());
      const int id = RecordId(pixels);
      CHECK(static_cast<uint64_t>(id) == order[j * 3 + k]);  // shard k record j
      CHECK(label == id % 4);
      for (int p = 0; p < 6; ++p) CHECK(pixels[p] == doctest::Approx((id * 10 + p) / 255.0f));
      seen.insert(id);
    }
  }
  CHECK(seen == std::multiset<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});

  ShardReader test;
  REQUIRE(test.Open(tmp.path + "/test.shard").ok());
  REQUIRE(test.records() == 4);
  for (uint64_t j = 0; j < 4; ++j) {  // the test set keeps its order
    REQUIRE(test.Read(j, pixels, &label).ok());
    CHECK(RecordId(pixels) == static_cast<int>(j));
  }
  CHECK(!test.Read(4, pixels, &label).ok());
}

TEST_CASE("shard: equal-size shards get different whole-file checksums") {
  TempDir tmp;
  Manifest m;
  REQUIRE(WriteShards(SmallSpec(tmp.path, 42), &m).ok());
  REQUIRE(m.train.size() == 3);
  const std::string a = Slurp(tmp.path + "/" + m.train[1].file);
  const std::string b = Slurp(tmp.path + "/" + m.train[2].file);
  REQUIRE(a.size() == b.size());  // 3 records each
  REQUIRE(a != b);
  // Why not CRC-32: each record ends with its own CRC, so a whole file's CRC is a constant.
  CHECK(Crc32(a.data(), a.size()) == Crc32(b.data(), b.size()));
  CHECK(m.train[1].fnv1a64 == HexU64(Fnv1a64(a)));
  CHECK(m.train[2].fnv1a64 == HexU64(Fnv1a64(b)));
  CHECK(m.train[1].fnv1a64 != m.train[2].fnv1a64);
  CHECK(m.train[1].fnv1a64.size() == 16);
}

TEST_CASE("shard: same seed gives identical files, another seed another order") {
  TempDir a, b, c;
  Manifest m;
  REQUIRE(WriteShards(SmallSpec(a.path, 5), &m).ok());
  REQUIRE(WriteShards(SmallSpec(b.path, 5), &m).ok());
  REQUIRE(WriteShards(SmallSpec(c.path, 6), &m).ok());
  for (const char* f :
       {"train-00000.shard", "train-00001.shard", "train-00002.shard", "test.shard", "manifest.json"})
    CHECK_MESSAGE(Slurp(a.path + "/" + f) == Slurp(b.path + "/" + f), f);
  bool any_differs = false;
  for (const char* f : {"train-00000.shard", "train-00001.shard", "train-00002.shard"})
    any_differs = any_differs || Slurp(a.path + "/" + f) != Slurp(c.path + "/" + f);
  CHECK(any_differs);
  CHECK(Slurp(a.path + "/test.shard") == Slurp(c.path + "/test.shard"));
}

TEST_CASE("shard: a flipped byte fails only that record") {
  TempDir tmp;
  Manifest m;
  REQUIRE(WriteShards(SmallSpec(tmp.path, 1), &m).ok());
  const std::string path = tmp.path + "/train-00000.shard";
  std::string bytes = Slurp(path);
  const size_t header = 8 + 4 + 4 + 8 + 4 + 3 * 4 + 4;
  const size_t stride = 6 + 8;
  bytes[header + 2 * stride + 1] ^= 0x40;  // a pixel of record 2
  REQUIRE(WriteFileAtomic(path, bytes).ok());

  ShardReader reader;
  REQUIRE(reader.Open(path).ok());
  float pixels[6];
  int32_t label;
  Status s = reader.Read(2, pixels, &label);
  CHECK(s.IsCorruption());
  CHECK(s.message().find("record 2") != std::string::npos);
  CHECK(s.message().find("checksum mismatch") != std::string::npos);
  CHECK(s.message().find(path) != std::string::npos);
  for (uint64_t j : {0, 1, 3}) CHECK(reader.Read(j, pixels, &label).ok());
}

TEST_CASE("shard: Open refuses truncated, padded and damaged files") {
  TempDir tmp;
  Manifest m;
  REQUIRE(WriteShards(SmallSpec(tmp.path, 1), &m).ok());
  const std::string path = tmp.path + "/train-00001.shard";
  const std::string good = Slurp(path);
  ShardReader reader;

  REQUIRE(WriteFileAtomic(path, good.substr(0, good.size() - 1)).ok());
  Status s = reader.Open(path);
  CHECK(s.IsCorruption());
  CHECK(s.message().find("truncated") != std::string::npos);

  REQUIRE(WriteFileAtomic(path, good + "x").ok());
  CHECK(!reader.Open(path).ok());

  std::string bad = good;
  bad[0] = 'X';
  REQUIRE(WriteFileAtomic(path, bad).ok());
  CHECK(reader.Open(path).message().find("magic") != std::string::npos);

  bad = good;
  bad[16] ^= 1;  // record count, covered by the header CRC
  REQUIRE(WriteFileAtomic(path, bad).ok());
  CHECK(reader.Open(path).message().find("header checksum") != std::string::npos);

  CHECK(reader.Open(tmp.path + "/none.shard").IsIOError());
}

TEST_CASE("shard: writer refuses inconsistent input") {
  TempDir tmp;
  Manifest m;
  ShardSpec spec = SmallSpec(tmp.path, 1);
  spec.train_labels = Array({9}, std::vector<uint8_t>(9, 0));
  CHECK(WriteShards(spec, &m).message().find("10 images but 9 labels") != std::string::npos);
  spec = SmallSpec(tmp.path, 1);
  spec.shards = 11;
  CHECK(!WriteShards(spec, &m).ok());
  spec.shards = 0;
  CHECK(!WriteShards(spec, &m).ok());
  CHECK(!std::filesystem::exists(tmp.path + "/manifest.json"));
}

TEST_CASE("shard: manifest with a missing or wrong field is refused naming it") {
  TempDir tmp;
  Manifest m;
  REQUIRE(WriteShards(SmallSpec(tmp.path, 1), &m).ok());
  const std::string path = tmp.path + "/manifest.json";
  const nlohmann::json good = nlohmann::json::parse(Slurp(path));

  auto load_with = [&](const nlohmann::json& j) {
    REQUIRE(WriteFileAtomic(path, j.dump()).ok());
    return LoadManifest(tmp.path, &m);
  };
  nlohmann::json j = good;
  j.erase("classes");
  Status s = load_with(j);
  CHECK(s.message().find("field 'classes' is missing") != std::string::npos);
  CHECK(s.message().find(path) != std::string::npos);

  j = good;
  j["train"][1].erase("fnv1a64");
  CHECK(load_with(j).message().find("'train[1].fnv1a64'") != std::string::npos);

  j = good;
  j["train"][1]["fnv1a64"] = "0123456789ABCDEF";  // upper case
  CHECK(load_with(j).message().find("'train[1].fnv1a64'") != std::string::npos);

  j = good;
  j["train"][1]["fnv1a64"] = 12345;
  CHECK(load_with(j).message().find("'train[1].fnv1a64'") != std::string::npos);

  j = good;
  j["train"][1]["crc32"] = 0;  // the old field
  CHECK(load_with(j).message().find("'train[1].crc32'") != std::string::npos);

  j = good;
  j["record_shape"] = "1x2x3";
  CHECK(load_with(j).message().find("'record_shape'") != std::string::npos);

  j = good;
  j["shards"] = 2;
  CHECK(load_with(j).message().find("'shards'") != std::string::npos);

  j = good;
  j["test"]["file"] = "../elsewhere.shard";
  CHECK(load_with(j).message().find("'test.file'") != std::string::npos);

  j = good;
  j["extra"] = 1;
  CHECK(load_with(j).message().find("'extra'") != std::string::npos);

  REQUIRE(WriteFileAtomic(path, "{not json").ok());
  CHECK(LoadManifest(tmp.path, &m).message().find("not valid JSON") != std::string::npos);
}

}  // namespace shoal
