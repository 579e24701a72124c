// Tests for lib/train/carried_state: a worker's carried state saved per step,
// read back exactly, the files kept that a restart may need and no others,
// and a file that is not what the worker wrote refused, naming it.
#include "train/carried_state.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/file_util.h"
#include "test_util.h"

namespace shoal {
namespace {

constexpr int kBatch = 3;
constexpr uint64_t kPlan = 0x1234abcd;

// Two carrying layers of 2 and 4 floats a row.
struct States {
  std::vector<float> a, b;
  std::vector<CarriedState> views() { return {{&a, 2}, {&b, 4}}; }
  static States For(float seed) {
    States s;
    for (int i = 0; i < 2 * kBatch; ++i) s.a.push_back(seed + 0.25f * i);
    for (int i = 0; i < 4 * kBatch; ++i) s.b.push_back(-seed * 1e-7f * i);
    return s;
  }
};

std::vector<uint64_t> StepsKept(const CarriedStateFiles& files, uint64_t up_to) {
  std::vector<uint64_t> kept;
  for (uint64_t s = 0; s <= up_to; ++s)
    if (std::filesystem::exists(files.Path(s))) kept.push_back(s);
  return kept;
}

TEST_CASE("carried state: saved per step, read back bit for bit; a step never saved is not found") {
  TempDir dir;
  CarriedStateFiles files(dir.path + "/state", 1, 0, kPlan);
  REQUIRE(files.Open().ok());
  States saved = States::For(3.5f);
  REQUIRE(files.Save(7, saved.views()).ok());
  States loaded;
  bool found = false;
  REQUIRE(files.Load(7, kBatch, loaded.views(), &found).ok());
  CHECK(found);
  CHECK(loaded.a == saved.a);
  CHECK(loaded.b == saved.b);
  REQUIRE(files.Load(8, kBatch, loaded.views(), &found).ok());
  CHECK(!found);
  CHECK(files.Path(7) == dir.path + "/state/worker-1.step-7.state");
}

TEST_CASE("carried state: the last two steps are kept, and the last three checkpoint steps") {
  TempDir dir;
  CarriedStateFiles plain(dir.path, 0, 0, kPlan), checkpointing(dir.path, 1, 10, kPlan);
  States s = States::For(1.0f);
  for (uint64_t step = 1; step <= 47; ++step) {
    REQUIRE(plain.Save(step, s.views()).ok());
    REQUIRE(checkpointing.Save(step, s.views()).ok());
  }
  CHECK(StepsKept(plain, 50) == std::vector<uint64_t>{46, 47});
  CHECK(StepsKept(checkpointing, 50) == std::vector<uint64_t>{20, 30, 40, 46, 47});
}

TEST_CASE(
    "carried state: a file that is not the worker's own is refused, naming the file and what is wrong") {
  TempDir dir;
  CarriedStateFiles files(dir.path, 0, 0, kPlan);
  States saved = States::For(2.0f);
  REQUIRE(files.Save(5, saved.views()).ok());
  std::string bytes;
  REQUIRE(ReadFile(files.Path(5), &bytes).ok());
  States loaded;
  bool found = false;

  SUBCASE("another batch size") {
    Status s = files.Load(5, kBatch + 1, loaded.views(), &found);
    CHECK(s.IsCorruption());
    CHECK(Contains(s.message(), "'" + files.Path(5) +
                                    "' is not the state this worker saved for step 5: 124 bytes "
                                    "where the net's state for 4 rows takes 148"));
  }
  SUBCASE("a byte changed") {
    bytes[30] ^= 1;
    REQUIRE(WriteFileAtomic(files.Path(5), bytes).ok());
    Status s = files.Load(5, kBatch, loaded.views(), &found);
    CHECK(Contains(s.message(), "its checksum does not match its bytes"));
  }
  SUBCASE("another step's file under this step's name") {
    REQUIRE(files.Save(6, saved.views()).ok());
    std::filesystem::rename(files.Path(6), files.Path(5));
    Status s = files.Load(5, kBatch, loaded.views(), &found);
    CHECK(Contains(s.message(), "it holds step 6"));
  }
  SUBCASE("a state saved under another plan (a directory reused)") {
    CarriedStateFiles other(dir.path, 0, 0, kPlan + 1);
    REQUIRE(other.Save(5, saved.views()).ok());
    Status s = files.Load(5, kBatch, loaded.views(), &found);
    CHECK(Contains(s.message(), "it was saved under plan 000000001234abce, this run's is 000000001234abcd"));
  }
  SUBCASE("a longer file is not read past what the net needs") {
    bytes.append(1 << 20, '\0');
    REQUIRE(WriteFileAtomic(files.Path(5), bytes).ok());
    Status s = files.Load(5, kBatch, loaded.views(), &found);
    CHECK(!s.ok());
    CHECK(Contains(s.message(), "larger than 124 bytes"));
  }
}

}  // namespace
}  // namespace shoal
