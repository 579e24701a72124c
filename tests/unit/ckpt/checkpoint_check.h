// Two checkpoints alike: every field of theirs and of each tensor, the data
// value for value.
#pragma once

#include <doctest/doctest.h>

#include <cstddef>

#include "ckpt/checkpoint.h"

namespace shoal {

inline void CheckSameCheckpoint(const Checkpoint& a, const Checkpoint& b) {
  CHECK(a.plan_hash == b.plan_hash);
  CHECK(a.server == b.server);
  CHECK(a.servers == b.servers);
  CHECK(a.step == b.step);
  CHECK(a.updates == b.updates);
  CHECK(a.updates_from == b.updates_from);
  CHECK(a.metric == b.metric);
  REQUIRE(a.tensors.size() == b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    INFO("tensor " << i);
    const CheckpointTensor &x = a.tensors[i], &y = b.tensors[i];
    CHECK(x.name == y.name);
    CHECK(x.param == y.param);
    CHECK(x.role == y.role);
    CHECK(x.key == y.key);
    CHECK(x.offset == y.offset);
    CHECK(x.shape == y.shape);
    CHECK(x.data == y.data);
  }
}

}  // namespace shoal
