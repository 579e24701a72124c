// Tests for lib/ckpt/export: .npz and .safetensors as other tools read them.
#include "ckpt/export.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "ckpt/checkpoint_set.h"
#include "core/file_util.h"
#include "core/hash.h"
#include "core/output.h"
#include "test_util.h"
#include "train/evaluate.h"

namespace shoal {
namespace {

// w [2, 5] cut into floats 0..6 (server 0) and 6..10 (server 1); b [3] whole on server 1.
std::vector<float> Range(float start, int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = start + i;
  return v;
}

Checkpoint ServerCheckpoint(int server, uint64_t step, nlohmann::json metric = nullptr) {
  Checkpoint c;
  c.plan_hash = "00000000000000aa";
  c.server = server;
  c.servers = 2;
  c.step = step;
  c.updates = step * 2;
  c.metric = metric;
  const std::vector<int> w_shape = {2, 5}, b_shape = {3};
  float base = static_cast<float>(step);
  if (server == 0) {
    c.tensors.push_back({"w[0]", "w", "value", 0, 0, w_shape, Range(base, 6)});
    c.tensors.push_back({"w[0]@velocity", "w", "velocity", 0, 0, w_shape, Range(-base, 6)});
  } else {
    c.tensors.push_back({"w[6]", "w", "value", 1, 6, w_shape, Range(base + 6, 4)});
    c.tensors.push_back({"w[6]@velocity", "w", "velocity", 1, 6, w_shape, Range(-base + 6, 4)});
    c.tensors.push_back({"b", "b", "value", 2, 0, b_shape, {0.5f, -0.5f, 1.5f}});
    c.tensors.push_back({"b@velocity", "b", "velocity", 2, 0, b_shape, {0.0f, 0.0f, 0.0f}});
  }
  return c;
}

void WriteSet(const std::string& dir, uint64_t step, nlohmann::json metric = nullptr) {
  for (int s = 0; s < 2; ++s)
    REQUIRE(WriteCheckpoint(CheckpointPath(dir, s, step), ServerCheckpoint(s, step, metric)).ok());
}

uint64_t GetLe(const std::string& b, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  return v;
}

std::vector<float> Floats(const std::string& b, size_t at, size_t n) {
  std::vector<float> v(n);
  std::memcpy(v.data(), b.data() + at, 4 * n);
  return v;
}

TEST_CASE("npz: a zip of stored .npy entries whose CRCs, names, headers and data parse back") {
  std::vector<float> w = Range(1, 10), b = {0.5f, -0.5f, 1.5f};
  std::vector<ExportTensor> tensors = {{"fc1.weight", {2, 5}, &w}, {"fc1.bias", {3}, &b}};
  std::string zip;
  REQUIRE(EncodeNpz(tensors, &zip).ok());

  // End of central directory: the last 22 bytes.
  REQUIRE(zip.size() > 22);
  size_t eocd = zip.size() - 22;
  CHECK(GetLe(zip, eocd, 4) == 0x06054b50);
  CHECK(GetLe(zip, eocd + 10, 2) == 2);
  size_t cd_size = GetLe(zip, eocd + 12, 4), cd = GetLe(zip, eocd + 16, 4);
  CHECK(cd + cd_size == eocd);
  std::map<std::string, std::string> entries;
  for (int i = 0; i < 2; ++i) {
    REQUIRE(GetLe(zip, cd, 4) == 0x02014b50);
    CHECK(GetLe(zip, cd + 10, 2) == 0);  // stored
    uint32_t crc = GetLe(zip, cd + 16, 4);
    size_t size = GetLe(zip, cd + 20, 4), name_len = GetLe(zip, cd + 28, 2);
    size_t local = GetLe(zip, cd + 42, 4);
    std::string name = zip.substr(cd + 46, name_len);
    REQUIRE(GetLe(zip, local, 4) == 0x04034b50);
    CHECK(GetLe(zip, local + 14, 4) == crc);
    CHECK(zip.substr(local + 30, name_len) == name);
    std::string data = zip.substr(local + 30 + name_len + GetLe(zip, local + 28, 2), size);
    CHECK(Crc32(data.data(), data.size()) == crc);
    entries[name] = data;
    cd += 46 + name_len;
  }
  REQUIRE(entries.count("fc1.weight.npy"));
  REQUIRE(entries.count("fc1.bias.npy"));
  const std::string& npy = entries["fc1.weight.npy"];
  CHECK(npy.substr(0, 6) == "\x93NUMPY");
  CHECK(npy[6] == 1);
  CHECK(npy[7] == 0);
  size_t header_len = GetLe(npy, 8, 2);
  CHECK((10 + header_len) % 64 == 0);
  std::string header = npy.substr(10, header_len);
  CHECK(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 5), }", 0) == 0);
  CHECK(header.back() == '\n');
  CHECK(Floats(npy, 10 + header_len, 10) == w);
  CHECK(npy.size() == 10 + header_len + 40);
  const std::string& bias = entries["fc1.bias.npy"];
  CHECK(Contains(bias.substr(10, GetLe(bias, 8, 2)), "'shape': (3,), }"));
}

TEST_CASE("safetensors: length, a space-padded JSON header with F32 offsets, then the data") {
  std::vector<float> w = Range(1, 10), b = {0.5f, -0.5f, 1.5f};
  std::vector<ExportTensor> tensors = {{"fc1.weight", {2, 5}, &w}, {"fc1.bias", {3}, &b}};
  std::string out;
  REQUIRE(EncodeSafetensors(tensors, {{"step", "300"}}, &out).ok());
  uint64_t n = GetLe(out, 0, 8);
  CHECK(n % 8 == 0);
  REQUIRE(8 + n + 52 == out.size());
  nlohmann::json h = nlohmann::json::parse(out.substr(8, n));
  CHECK(h["__metadata__"]["step"] == "300");
  CHECK(h["fc1.weight"]["dtype"] == "F32");
  CHECK(h["fc1.weight"]["shape"] == nlohmann::json({2, 5}));
  CHECK(h["fc1.weight"]["data_offsets"] == nlohmann::json({0, 40}));
  CHECK(h["fc1.bias"]["data_offsets"] == nlohmann::json({40, 52}));
  CHECK(Floats(out, 8 + n, 10) == w);
  CHECK(Floats(out, 8 + n + 40, 3) == b);
}

TEST_CASE("export takes whole values (the updater's state on request) from a merged checkpoint only") {
  Checkpoint m;
  std::vector<std::string> files;
  TempDir dir;
  WriteSet(dir.path, 100);
  REQUIRE(LoadModel({dir.path}, -1, &m, &files).ok());
  std::vector<ExportTensor> t;
  REQUIRE(ExportTensors(m, false, &t).ok());
  REQUIRE(t.size() == 2);
  CHECK(t[0].name == "w");
  CHECK(t[1].name == "b");
  REQUIRE(ExportTensors(m, true, &t).ok());
  CHECK(t.size() == 4);
  CHECK(t[1].name == "w@velocity");
  CHECK(Contains(ExportTensors(ServerCheckpoint(0, 1), false, &t).message(), "merge the servers' set first"));

  // Whatever state the updater keeps: Adam's two buffers.
  Checkpoint adam;
  adam.server = -1;
  const std::vector<float> data = {1, 2};
  adam.tensors.push_back({"b", "b", "value", 0, 0, {2}, data});
  adam.tensors.push_back({"b@exp_avg", "b", "exp_avg", 0, 0, {2}, data});
  adam.tensors.push_back({"b@exp_avg_sq", "b", "exp_avg_sq", 0, 0, {2}, data});
  REQUIRE(ExportTensors(adam, false, &t).ok());
  CHECK(t.size() == 1);
  REQUIRE(ExportTensors(adam, true, &t).ok());
  REQUIRE(t.size() == 3);
  CHECK(t[1].name == "b@exp_avg");
  CHECK(t[2].name == "b@exp_avg_sq");

  ExportFormat f;
  CHECK(ChooseExportFormat("", "a.npz", &f).ok());
  CHECK(f == ExportFormat::kNpz);
  CHECK(ChooseExportFormat("", "a.safetensors", &f).ok());
  CHECK(f == ExportFormat::kSafetensors);
  CHECK(Contains(ChooseExportFormat("", "a.bin", &f).message(), "cannot tell the format of 'a.bin'"));
  nlohmann::json report;
  REQUIRE(ExportCheckpoint(m, dir.path + "/m.npz", ExportFormat::kNpz, false, &report).ok());
  CHECK(report["tensors"].size() == 2);
  CHECK(std::filesystem::exists(dir.path + "/m.npz"));
}

TEST_CASE("a batch norm's export carries PyTorch's num_batches_tracked: the step, as an int64 scalar") {
  Checkpoint bn;
  bn.server = -1;
  bn.step = 300;
  const std::vector<float> two = {1, 2};
  for (const char* name : {"bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var"})
    bn.tensors.push_back({name, name, "value", 0, 0, {2}, two});
  bn.tensors.push_back({"bn1.running_var@velocity", "bn1.running_var", "velocity", 0, 0, {2}, two});
  std::vector<ExportTensor> t;
  REQUIRE(ExportTensors(bn, true, &t).ok());
  REQUIRE(t.size() == 6);
  CHECK(t[4].name == "bn1.num_batches_tracked");
  CHECK(t[4].type == ExportType::kInt64);
  CHECK(t[4].shape.empty());
  CHECK(t[4].integer == 300);
  CHECK(t[5].name == "bn1.running_var@velocity");

  const std::string npy = EncodeNpy(t[4]);
  CHECK(npy.find("{'descr': '<i8', 'fortran_order': False, 'shape': (), }") != std::string::npos);
  const size_t data = 10 + GetLe(npy, 8, 2);  // magic, version, header length, header
  CHECK(data % 64 == 0);
  REQUIRE(npy.size() == data + 8);
  CHECK(GetLe(npy, data, 8) == 300);
  std::string out;
  REQUIRE(EncodeSafetensors(t, {}, &out).ok());
  const uint64_t n = GetLe(out, 0, 8);
  const nlohmann::json h = nlohmann::json::parse(out.substr(8, n));
  CHECK(h["bn1.num_batches_tracked"]["dtype"] == "I64");
  CHECK(h["bn1.num_batches_tracked"]["shape"] == nlohmann::json::array());
  CHECK(h["bn1.num_batches_tracked"]["data_offsets"] == nlohmann::json({32, 40}));
  CHECK(GetLe(out, 8 + n + 32, 8) == 300);
  REQUIRE(8 + n + 48 == out.size());
}

}  // namespace
}  // namespace shoal
