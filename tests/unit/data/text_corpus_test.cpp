// Tests for lib/data/text_corpus.cpp and a text dataset's shards: windows,
// vocabulary, the test set from the tail, and the manifest's checks.
#include "data/text_corpus.h"

#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "data/shard.h"
#include "test_util.h"

namespace shoal {
namespace {

std::string WriteText(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.path + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST_CASE("a text corpus: files in order, windows sharing one symbol, the vocabulary its sorted bytes") {
  TempDir dir;
  // "abcab" + "cabca" = "abcabcabca": 10 bytes, windows of 4 step by 3: 3 windows.
  const auto a = WriteText(dir, "a.txt", "abcab"), b = WriteText(dir, "b.txt", "cabca");
  ShardSpec spec;
  REQUIRE(ReadTextCorpus({a, b}, 4, 0.3, &spec).ok());
  CHECK(spec.dataset == "text");
  CHECK(spec.vocabulary == std::vector<int>{'a', 'b', 'c'});
  // Windows "abca", "abca", "abca" (bytes 0-3, 3-6, 6-9): the last is the test set's.
  CHECK(spec.train_images.dims == std::vector<int>{2, 4});
  CHECK(spec.train_images.bytes == std::vector<uint8_t>{0, 1, 2, 0, 0, 1, 2, 0});
  CHECK(spec.test_images.dims == std::vector<int>{1, 4});
  CHECK(spec.test_images.bytes == std::vector<uint8_t>{0, 1, 2, 0});
  CHECK(spec.train_labels.bytes == std::vector<uint8_t>{0, 0});

  // Written and read back: ids as they are, the vocabulary in the manifest.
  spec.out_dir = dir.path;
  spec.shards = 1;
  Manifest m;
  REQUIRE(WriteShards(spec, &m).ok());
  Manifest back;
  REQUIRE(LoadManifest(dir.path, &back).ok());
  CHECK(back.vocabulary == spec.vocabulary);
  CHECK(back.classes == 3);
  CHECK(back.record_shape == Shape{4});
  ShardReader reader;
  REQUIRE(reader.Open(dir.path, back.test, back).ok());
  float record[4];
  int32_t label;
  REQUIRE(reader.Read(0, record, &label).ok());
  CHECK(std::vector<float>(record, record + 4) == std::vector<float>{0, 1, 2, 0});
}

TEST_CASE("a text too short for a train and a test window, or a bad window, is refused") {
  TempDir dir;
  ShardSpec spec;
  const auto tiny = WriteText(dir, "tiny.txt", "abcd");
  Status s = ReadTextCorpus({tiny}, 4, 0.5, &spec);
  CHECK(s.message().find("the text holds 4 bytes: 1 windows of 4, too few") != std::string::npos);
  CHECK(!ReadTextCorpus({tiny}, 1, 0.5, &spec).ok());
  CHECK(!ReadTextCorpus({dir.path + "/missing.txt"}, 4, 0.5, &spec).ok());
  CHECK(!ReadTextCorpus({}, 4, 0.5, &spec).ok());
}

TEST_CASE("a manifest's vocabulary: distinct bytes, as many as its classes") {
  nlohmann::json m = {
      {"format", "shoal-shards"},
      {"version", 1},
      {"dataset", "text"},
      {"record_shape", {4}},
      {"classes", 3},
      {"vocabulary", {97, 98, 99}},
      {"seed", 1},
      {"shards", 1},
      {"train_records", 2},
      {"created_by", "test"},
      {"train", {{{"file", "train-00000.shard"}, {"records", 2}, {"fnv1a64", "0123456789abcdef"}}}},
      {"test", {{"file", "test.shard"}, {"records", 1}, {"fnv1a64", "0123456789abcdef"}}}};
  Manifest parsed;
  REQUIRE(ParseManifest(m.dump(), "manifest.json", &parsed).ok());
  CHECK(parsed.vocabulary == std::vector<int>{97, 98, 99});
  m["vocabulary"] = {97, 97, 99};
  CHECK(ParseManifest(m.dump(), "manifest.json", &parsed).message().find("distinct byte values") !=
        std::string::npos);
  m["vocabulary"] = {97, 98, 300};
  CHECK(!ParseManifest(m.dump(), "manifest.json", &parsed).ok());
  m["vocabulary"] = {97, 98};
  CHECK(ParseManifest(m.dump(), "manifest.json", &parsed).message().find("is 3 but the vocabulary holds 2") !=
        std::string::npos);
}

}  // namespace
}  // namespace shoal
