// Tests for lib/ckpt (checkpoint files: round trip, corruption and truncation
// named by tensor, listing, comparison) and WriteFileAtomic.
#include "ckpt/checkpoint.h"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "ckpt/checkpoint_check.h"
#include "ckpt/compare.h"
#include "config/choices.h"
#include "core/file_util.h"
#include "core/hash.h"
#include "test_util.h"

namespace shoal {
namespace {

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

CheckpointTensor MakeTensor(const std::string& name, const std::string& role, uint32_t key, uint64_t offset,
                            std::vector<int> shape, std::vector<float> data) {
  std::string param = name.substr(0, name.find_first_of("@["));
  return {name, param, role, key, offset, std::move(shape), std::move(data)};
}

// A server's checkpoint: fc.weight cut into two slices, fc.bias whole.
Checkpoint Sample() {
  Checkpoint c;
  c.plan_hash = "0123456789abcdef";
  c.server = 1;
  c.step = 42;
  c.updates = 84;
  c.tensors.push_back(MakeTensor("fc.weight[0]", "value", 0, 0, {2, 3}, {1.0f, -2.0f, 3.5f}));
  c.tensors.push_back(MakeTensor("fc.weight[0]@velocity", "velocity", 0, 0, {2, 3}, {0.1f, 0.2f, 0.3f}));
  c.tensors.push_back(MakeTensor("fc.weight[3]", "value", 1, 3, {2, 3}, {4.0f, 5.0f, -6.0f}));
  c.tensors.push_back(MakeTensor("fc.bias", "value", 2, 0, {2}, {0.25f, -0.75f}));
  return c;
}

std::string ReadBytes(const std::string& path) {
  std::string bytes;
  REQUIRE(ReadFile(path, &bytes).ok());
  return bytes;
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Where tensor `index`'s data begins in the file: preamble (magic, version,
// header size), header, header CRC, then the tensor's data_offset.
size_t TensorDataStart(const std::string& path, const std::string& bytes, size_t index) {
  nlohmann::json header;
  REQUIRE(ReadCheckpointHeader(path, &header).ok());
  uint64_t header_bytes;
  std::memcpy(&header_bytes, bytes.data() + 12, 8);
  return 8 + 4 + 8 + header_bytes + 4 + header["tensors"][index]["data_offset"].get<size_t>();
}

TEST_CASE("a checkpoint written and read back is the same") {
  TempDir dir;
  const Checkpoint written = Sample();
  const std::string path = CheckpointPath(dir.path, written.server, written.step);
  Status s = WriteCheckpoint(path, written);
  INFO(s.ToString());
  REQUIRE(s.ok());
  Checkpoint read;
  s = ReadCheckpoint(path, &read);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(read.server == 1);
  CHECK(read.step == 42);
  CHECK(read.updates == 84);
  CheckSameCheckpoint(read, written);
}

TEST_CASE("the header can be read alone and carries the format name and version") {
  TempDir dir;
  const std::string path = dir.path + "/a.ckpt";
  REQUIRE(WriteCheckpoint(path, Sample()).ok());
  nlohmann::json header;
  REQUIRE(ReadCheckpointHeader(path, &header).ok());
  CHECK(header["format"] == "shoal-checkpoint");
  CHECK(header["version"] == 1);
  CHECK(header["step"] == 42);
  CHECK(header["tensors"].size() == 4);
  CHECK(header["tensors"][2]["count"] == 3);
  CHECK(header["tensors"][2]["data_offset"] == 24);  // after two tensors of 3 floats
  CHECK(ReadBytes(path).substr(0, 8) == "SHOALCKP");
}

TEST_CASE("a flipped byte in tensor k's data is refused naming tensor k and its bytes") {
  TempDir dir;
  const std::string path = dir.path + "/a.ckpt";
  const Checkpoint ckpt = Sample();
  for (size_t k = 0; k < ckpt.tensors.size(); ++k) {
    INFO("tensor " << k << " '" << ckpt.tensors[k].name << "'");
    REQUIRE(WriteCheckpoint(path, ckpt).ok());
    std::string bytes = ReadBytes(path);
    const size_t start = TensorDataStart(path, bytes, k);
    bytes[start + 5] ^= 0x10;  // inside the second float
    WriteBytes(path, bytes);
    Checkpoint read;
    Status s = ReadCheckpoint(path, &read);
    CHECK(s.IsCorruption());
    const size_t end = start + 4 * ckpt.tensors[k].data.size();
    CHECK(s.message() == "'" + path + "': tensor '" + ckpt.tensors[k].name + "' (bytes " +
                             std::to_string(start) + ".." + std::to_string(end) + "): checksum mismatch");
  }
}

TEST_CASE("a flipped byte in the header is refused as a header checksum mismatch") {
  TempDir dir;
  const std::string path = dir.path + "/a.ckpt";
  REQUIRE(WriteCheckpoint(path, Sample()).ok());
  std::string bytes = ReadBytes(path);
  bytes[30] ^= 0x01;  // inside the JSON header
  WriteBytes(path, bytes);
  Checkpoint read;
  Status s = ReadCheckpoint(path, &read);
  CHECK(s.IsCorruption());
  CHECK(Contains(s.message(), "header checksum mismatch (bytes 20.."));
}

TEST_CASE("a header that is JSON but not an object is refused, by every reader") {
  TempDir dir;
  const std::string path = dir.path + "/a.ckpt";
  const std::string header = "[1, 2]";
  const uint32_t version = 1, crc = Crc32(header.data(), header.size());
  const uint64_t header_bytes = header.size();
  std::string bytes("SHOALCKP", 8);
  bytes.append(reinterpret_cast<const char*>(&version), 4);
  bytes.append(reinterpret_cast<const char*>(&header_bytes), 8);
  bytes += header;
  bytes.append(reinterpret_cast<const char*>(&crc), 4);
  WriteBytes(path, bytes);
  Checkpoint read;
  nlohmann::json h;
  for (const Status& s : {ReadCheckpoint(path, &read), ReadCheckpointHeader(path, &h)}) {
    CHECK(s.IsCorruption());
    CHECK(s.message() == "'" + path + "': its header is not a JSON object");
  }
}

TEST_CASE("a truncated checkpoint is refused, naming what is cut") {
  TempDir dir;
  const std::string path = dir.path + "/a.ckpt";
  REQUIRE(WriteCheckpoint(path, Sample()).ok());
  const std::string whole = ReadBytes(path);
  Checkpoint read;

  WriteBytes(path, whole.substr(0, whole.size() - 1));  // the last tensor loses a byte
  Status s = ReadCheckpoint(path, &read);
  CHECK(s.IsCorruption());
  CHECK(Contains(s.message(), "tensor 'fc.bias' (bytes "));
  CHECK(Contains(s.message(), "runs past the end of the file (truncated?)"));

  WriteBytes(path, whole.substr(0, 100));  // inside the header
  s = ReadCheckpoint(path, &read);
  CHECK(s.IsCorruption());
  CHECK(Contains(s.message(), "': header of "));
  CHECK(Contains(s.message(), "runs past the end of the file (truncated?)"));

  WriteBytes(path, whole.substr(0, 10));  // inside the preamble
  s = ReadCheckpoint(path, &read);
  CHECK(s.message() == "'" + path + "' is not a shoal checkpoint (bad magic or too short)");

  WriteBytes(path, "");
  CHECK(ReadCheckpoint(path, &read).IsCorruption());
}

TEST_CASE(
    "a file longer than its header accounts for is refused before its data is read; a stream is read no "
    "further than it must be") {
  TempDir dir;
  const std::string path = dir.path + "/s.ckpt";
  REQUIRE(WriteCheckpoint(path, Sample()).ok());
  const uint64_t size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, uint64_t{1} << 40);  // sparse: a terabyte that takes no disk
  Checkpoint back;
  Status s = ReadCheckpoint(path, &back);
  CHECK(s.IsCorruption());
  CHECK(Contains(s.message(),
                 std::to_string((uint64_t{1} << 40) - size) + " bytes after the last tensor's data"));
  s = ReadCheckpoint("/dev/zero", &back);  // a stream, read no further than its first bytes
  CHECK(s.message() == "'/dev/zero' is not a shoal checkpoint (bad magic or too short)");
  nlohmann::json header;
  CHECK(ReadCheckpointHeader(dir.path, &header).message() ==
        "'" + dir.path + "' is a directory, not a checkpoint file");
}

TEST_CASE("a tensor whose name could be a path, or hold a quote or a control byte, is refused") {
  TempDir dir;
  const std::string path = dir.path + "/names.ckpt";
  for (const std::string& bad : {std::string("../../evil"), std::string("fc\"x"), std::string("fc\0w", 4)}) {
    Checkpoint c = Sample();
    c.tensors[3].param = bad;
    c.tensors[3].name = bad;
    REQUIRE(WriteCheckpoint(path, c).ok());
    Checkpoint back;
    const Status s = ReadCheckpoint(path, &back);
    CHECK(Contains(s.message(), "field 'tensors[3].param' must be 1 to 160 of A-Z a-z 0-9 _ . -"));
  }
  Checkpoint c = Sample();
  c.tensors[3].name = "fc.bias/../x";
  REQUIRE(WriteCheckpoint(path, c).ok());
  Checkpoint back;
  CHECK(Contains(ReadCheckpoint(path, &back).message(), "field 'tensors[3].name' must be its param's"));
}

TEST_CASE("a tensor's role is 'value' or an updater's state, and every updater's state is a role") {
  CHECK(IsTensorRole("value"));
  for (const auto& rule : kUpdateRules)
    for (const std::string& state : UpdaterStateNames(RowValue(rule)))
      CHECK_MESSAGE(IsTensorRole(state), state);
  TempDir dir;
  const std::string path = dir.path + "/roles.ckpt";
  Checkpoint c = Sample();
  c.tensors[0].role = "weird";
  REQUIRE(WriteCheckpoint(path, c).ok());
  Checkpoint back;
  CHECK(
      Contains(ReadCheckpoint(path, &back).message(),
               "field 'tensors[0].role' must be 'value' or an updater's state ('velocity', 'exp_avg', ...), "
               "not 'weird'"));
}

TEST_CASE("a recorded accuracy outside 0 to 1 is refused; a null loss is passed over") {
  TempDir dir;
  const std::string path = dir.path + "/metric.ckpt";
  Checkpoint c = Sample();
  c.metric = {{"step", 10}, {"test_accuracy", 5.0}};
  REQUIRE(WriteCheckpoint(path, c).ok());
  Checkpoint back;
  CHECK(Contains(ReadCheckpoint(path, &back).message(),
                 "field 'metric.test_accuracy' must be a share from 0 to 1, not 5.0"));
  c.metric = {{"step", 10}, {"test_accuracy", 0.5}, {"test_loss", nullptr}};
  REQUIRE(WriteCheckpoint(path, c).ok());
  CHECK(ReadCheckpoint(path, &back).ok());
  c.metric = nlohmann::json::array({1, 2});
  REQUIRE(WriteCheckpoint(path, c).ok());
  CHECK(Contains(ReadCheckpoint(path, &back).message(), "field 'metric' must be an object"));
}

TEST_CASE("another format version or a foreign file is refused") {
  TempDir dir;
  const std::string path = dir.path + "/a.ckpt";
  REQUIRE(WriteCheckpoint(path, Sample()).ok());
  std::string bytes = ReadBytes(path);
  bytes[8] = 2;
  WriteBytes(path, bytes);
  Checkpoint read;
  Status s = ReadCheckpoint(path, &read);
  CHECK(s.message() == "'" + path + "': checkpoint format version 2, this build reads 1");

  WriteBytes(path, "PK\x03\x04 this is a zip file, not a checkpoint at all");
  s = ReadCheckpoint(path, &read);
  CHECK(Contains(s.message(), "is not a shoal checkpoint"));

  s = ReadCheckpoint(dir.path + "/missing.ckpt", &read);
  CHECK(s.IsIOError());
  CHECK(Contains(s.message(), "missing.ckpt"));
}

TEST_CASE("checkpoint names sort by step; ListCheckpoints lists one server's, oldest first") {
  TempDir dir;
  CHECK(CheckpointPath("d", 3, 42) == "d/server-3-step-0000000042.ckpt");
  Checkpoint c = Sample();
  for (uint64_t step : {10, 2, 100}) REQUIRE(WriteCheckpoint(CheckpointPath(dir.path, 0, step), c).ok());
  REQUIRE(WriteCheckpoint(CheckpointPath(dir.path, 1, 5), c).ok());
  REQUIRE(WriteCheckpoint(CheckpointPath(dir.path, 10, 7), c).ok());
  // Not checkpoints of server 0: a leftover temporary file and an unrelated one.
  WriteBytes(CheckpointPath(dir.path, 0, 500) + ".tmp.123", "partial");
  WriteBytes(dir.path + "/notes.txt", "x");

  CHECK(ListCheckpoints(dir.path, 0) == std::vector<std::string>{CheckpointPath(dir.path, 0, 2),
                                                                 CheckpointPath(dir.path, 0, 10),
                                                                 CheckpointPath(dir.path, 0, 100)});
  CHECK(ListCheckpoints(dir.path, 1) == std::vector<std::string>{CheckpointPath(dir.path, 1, 5)});
  CHECK(ListCheckpoints(dir.path, 2).empty());
  CHECK(ListCheckpoints(dir.path + "/nonexistent", 0).empty());
}

TEST_CASE("LatestCheckpoints gives the newest checkpoint of every server that has one") {
  TempDir dir;
  Checkpoint c = Sample();
  for (uint64_t step : {10, 2, 100}) REQUIRE(WriteCheckpoint(CheckpointPath(dir.path, 0, step), c).ok());
  for (uint64_t step : {5, 7}) REQUIRE(WriteCheckpoint(CheckpointPath(dir.path, 1, step), c).ok());
  CHECK(LatestCheckpoints(dir.path) ==
        std::vector<std::string>{CheckpointPath(dir.path, 0, 100), CheckpointPath(dir.path, 1, 7)});
  // Server 2 has none yet; server 3 has one: it is not hidden by the gap.
  REQUIRE(WriteCheckpoint(CheckpointPath(dir.path, 3, 1), c).ok());
  CHECK(LatestCheckpoints(dir.path) == std::vector<std::string>{CheckpointPath(dir.path, 0, 100),
                                                                CheckpointPath(dir.path, 1, 7),
                                                                CheckpointPath(dir.path, 3, 1)});
  TempDir empty;
  CHECK(LatestCheckpoints(empty.path).empty());
}

TEST_CASE("WriteFileAtomic replaces the file whole and leaves no temporary file behind") {
  TempDir dir;
  const std::string path = dir.path + "/out.json";
  REQUIRE(WriteFileAtomic(path, "first").ok());
  CHECK(ReadBytes(path) == "first");
  REQUIRE(WriteFileAtomic(path, std::string("second\0with nul", 15)).ok());
  CHECK(ReadBytes(path) == std::string("second\0with nul", 15));
  CHECK(FilesIn(dir.path) == std::vector<std::string>{"out.json"});

  REQUIRE(WriteCheckpoint(dir.path + "/a.ckpt", Sample()).ok());
  CHECK(FilesIn(dir.path) == std::vector<std::string>{"a.ckpt", "out.json"});
}

TEST_CASE("WriteFileAtomic over pieces writes them one after another, empty ones and all") {
  TempDir dir;
  const std::string path = dir.path + "/pieces";
  const std::string a = "header", b(5000, 'x'), c = "tail";
  REQUIRE(WriteFileAtomic(path, std::vector<std::string_view>{"", a, "", b, c, ""}).ok());
  CHECK(ReadBytes(path) == a + b + c);
  REQUIRE(WriteFileAtomic(path, std::vector<std::string_view>{}).ok());
  CHECK(ReadBytes(path).empty());
  CHECK(FilesIn(dir.path) == std::vector<std::string>{"pieces"});
}

TEST_CASE(
    "WriteFileAtomic writes through a link, into a pipe or a device as it is, and refuses a directory") {
  TempDir dir;
  const std::string target = dir.path + "/target", link = dir.path + "/link", fifo = dir.path + "/fifo";
  REQUIRE(WriteFileAtomic(target, "old").ok());
  std::filesystem::create_symlink("target", link);
  REQUIRE(WriteFileAtomic(link, "new").ok());
  CHECK(std::filesystem::is_symlink(link));
  CHECK(ReadBytes(target) == "new");
  // A pipe or a device takes the bytes as they come, and stays what it is.
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  std::string piped;
  std::thread reader([&] { piped = ReadBytes(fifo); });
  REQUIRE(WriteFileAtomic(fifo, "through the pipe").ok());
  reader.join();
  CHECK(piped == "through the pipe");
  CHECK(std::filesystem::is_fifo(fifo));
  REQUIRE(WriteFileAtomic("/dev/null", "discarded").ok());
  CHECK(std::filesystem::is_character_file("/dev/null"));
  CHECK(WriteFileAtomic(dir.path, "x").message() ==
        "'" + dir.path + "' is a directory: write to a file's path");
  CHECK(FilesIn(dir.path) == std::vector<std::string>{"fifo", "link", "target"});
}

TEST_CASE("WriteFileAtomic into a missing directory is an I/O error naming the file") {
  TempDir dir;
  Status s = WriteFileAtomic(dir.path + "/no/such/dir/out.json", "x");
  CHECK(s.IsIOError());
  CHECK(Contains(s.message(), "/no/such/dir/out.json.tmp."));
  CHECK(FilesIn(dir.path).empty());
}

TEST_CASE("DiffCheckpoints reports max absolute and relative differences per tensor") {
  Checkpoint a, b;
  a.step = 3;
  b.step = 5;
  a.tensors.push_back(MakeTensor("w", "value", 0, 0, {4}, {1.0f, 2.0f, -4.0f, 0.0f}));
  b.tensors.push_back(MakeTensor("w", "value", 0, 0, {4}, {1.0f, 2.5f, -4.0f, 0.0f}));
  a.tensors.push_back(MakeTensor("b", "value", 1, 0, {2}, {0.5f, -1.0f}));
  b.tensors.push_back(MakeTensor("b", "value", 1, 0, {2}, {0.25f, -1.0f}));
  a.tensors.push_back(MakeTensor("same", "value", 2, 0, {1}, {7.0f}));
  b.tensors.push_back(MakeTensor("same", "value", 2, 0, {1}, {7.0f}));
  a.tensors.push_back(MakeTensor("zeros", "value", 3, 0, {2}, {0.0f, 0.0f}));
  b.tensors.push_back(MakeTensor("zeros", "value", 3, 0, {2}, {0.0f, 0.0f}));
  a.tensors.push_back(MakeTensor("only_a", "value", 4, 0, {1}, {1.0f}));
  b.tensors.push_back(MakeTensor("only_b", "value", 5, 0, {1}, {1.0f}));
  a.tensors.push_back(MakeTensor("resized", "value", 6, 0, {2}, {1.0f, 2.0f}));
  b.tensors.push_back(MakeTensor("resized", "value", 6, 0, {3}, {1.0f, 2.0f, 3.0f}));

  nlohmann::json d = DiffCheckpoints(a, b);
  CHECK(d["step_a"] == 3);
  CHECK(d["step_b"] == 5);
  REQUIRE(d["tensors"].size() == 4);
  CHECK(d["tensors"][0]["name"] == "w");
  CHECK(d["tensors"][0]["max_abs"].get<double>() == doctest::Approx(0.5));
  CHECK(d["tensors"][0]["max_rel"].get<double>() == doctest::Approx(0.5 / 4.0));  // scale: max |value| = 4
  CHECK(d["tensors"][1]["name"] == "b");
  CHECK(d["tensors"][1]["max_abs"].get<double>() == doctest::Approx(0.25));
  CHECK(d["tensors"][1]["max_rel"].get<double>() == doctest::Approx(0.25 / 1.0));
  CHECK(d["tensors"][2]["max_abs"].get<double>() == 0.0);
  CHECK(d["tensors"][3]["max_rel"].get<double>() == 0.0);  // all zeros: no division by zero
  CHECK(d["max_abs"].get<double>() == doctest::Approx(0.5));
  CHECK(d["max_rel"].get<double>() == doctest::Approx(0.25));
  CHECK(d["only_in_a"] == nlohmann::json({"only_a", "resized"}));
  CHECK(d["only_in_b"] == nlohmann::json({"only_b", "resized"}));
}

TEST_CASE("SummarizeCheckpoint gives each tensor's L2 norm") {
  nlohmann::json s = SummarizeCheckpoint("x.ckpt", Sample());
  CHECK(s["path"] == "x.ckpt");
  CHECK(s["step"] == 42);
  REQUIRE(s["tensors"].size() == 4);
  CHECK(s["tensors"][3]["l2_norm"].get<double>() == doctest::Approx(std::sqrt(0.25 * 0.25 + 0.75 * 0.75)));
  CHECK(s["tensors"][0]["count"] == 3);
}

}  // namespace
}  // namespace shoal
