// Tests for lib/data/idx: reading MNIST's idx files, refusing bad ones.
#include "data/idx.h"

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
#include "data/shard.h"
#include "data/shard_writer.h"
#include "test_util.h"

namespace shoal {
namespace {

void WriteGz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

std::string IdxBytes(uint8_t type, const std::vector<uint32_t>& dims, const std::string& data) {
  std::string out = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((d >> shift) & 0xff));
  return out + data;
}

}  // namespace

TEST_CASE("idx: reads a gzipped unsigned-byte array") {
  TempDir tmp;
  const std::string path = tmp.path + "/tiny-idx3-ubyte.gz";
  WriteGz(path, IdxBytes(0x08, {2, 2, 3}, "abcdefghijkl"));
  IdxArray a;
  Status s = ReadIdx(path, &a);
  REQUIRE_MESSAGE(s.ok(), s.ToString());
  CHECK(a.dims == std::vector<int>{2, 2, 3});
  CHECK(std::string(a.bytes.begin(), a.bytes.end()) == "abcdefghijkl");
}

TEST_CASE("idx: reads a plain file too") {
  TempDir tmp;
  const std::string path = tmp.path + "/labels-idx1-ubyte";
  REQUIRE(WriteFileAtomic(path, IdxBytes(0x08, {3}, "\x01\x02\x03")).ok());
  IdxArray a;
  REQUIRE(ReadIdx(path, &a).ok());
  CHECK(a.dims == std::vector<int>{3});
  CHECK(a.bytes == std::vector<uint8_t>{1, 2, 3});
}

TEST_CASE("idx: refuses bad magic, wrong type, short and long data, missing file") {
  TempDir tmp;
  const std::string path = tmp.path + "/bad.gz";
  IdxArray a;
  std::string bad_magic = IdxBytes(0x08, {2}, "ab");
  bad_magic[0] = 0x1f;
  WriteGz(path, bad_magic);
  Status s = ReadIdx(path, &a);
  CHECK(!s.ok());
  CHECK(s.message().find("not an idx file") != std::string::npos);
  CHECK(s.message().find(path) != std::string::npos);

  WriteGz(path, IdxBytes(0x0d, {2}, "abcdefgh"));  // float data
  s = ReadIdx(path, &a);
  CHECK(s.message().find("not unsigned byte") != std::string::npos);

  WriteGz(path, IdxBytes(0x08, {2, 2}, "abc"));
  s = ReadIdx(path, &a);
  CHECK(s.message().find("truncated") != std::string::npos);

  WriteGz(path, IdxBytes(0x08, {2}, "abc"));
  s = ReadIdx(path, &a);
  CHECK(s.message().find("trailing") != std::string::npos);

  s = ReadIdx(tmp.path + "/missing.gz", &a);
  CHECK(s.IsIOError());
  CHECK(s.message().find("missing.gz") != std::string::npos);
}

}  // namespace shoal
