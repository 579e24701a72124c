// Tests for lib/train/evaluate: a checkpoint's values into a net.
#include "train/evaluate.h"

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
#include "ckpt/export.h"
#include "core/file_util.h"
#include "core/hash.h"
#include "core/output.h"
#include "test_util.h"

namespace shoal {
namespace {

TEST_CASE("FillParamsFromCheckpoint copies values by name and refuses a mismatch naming it") {
  Checkpoint m;
  m.server = -1;
  m.tensors.push_back({"fc.weight", "fc.weight", "value", 0, 0, {2, 2}, {1, 2, 3, 4}});
  m.tensors.push_back({"fc.weight@velocity", "fc.weight", "velocity", 0, 0, {2, 2}, {9, 9, 9, 9}});
  Param p;
  p.name = "fc.weight";
  p.shape = {2, 2};
  p.value = Tensor({2, 2});
  REQUIRE(FillParamsFromCheckpoint(m, "m.ckpt", {&p}).ok());
  CHECK(p.value.data()[3] == 4.0f);
  Param q = p;
  q.shape = {4, 1};
  q.value = Tensor({4, 1});
  CHECK(FillParamsFromCheckpoint(m, "m.ckpt", {&q}).message() ==
        "'m.ckpt': parameter 'fc.weight' is [2,2], the plan's net has [4,1]");
  Param r = p;
  r.name = "fc.bias";
  CHECK(Contains(FillParamsFromCheckpoint(m, "m.ckpt", {&p, &r}).message(), "has no parameter 'fc.bias'"));
  CHECK(Contains(FillParamsFromCheckpoint(m, "m.ckpt", {}).message(),
                 "has parameter 'fc.weight', which the plan's net lacks"));
}

}  // namespace
}  // namespace shoal
