// Tests for lib/layers/embedding_layer.cpp.
#include <doctest/doctest.h>

#include "gradient_check.h"

namespace shoal {
namespace {

struct Embedding {
  InputLayer ids{{5}};
  std::unique_ptr<Layer> layer;
  std::vector<Layer*> srcs{&ids};
  Embedding() {
    layer = SetUpLayer("embedding", "{vocab: 4, num_output: 3, steps: 4}", {&ids});
    ids.Allocate(2);
    layer->Allocate(2);
    // Record 0: 2 0 3 2 (then 1, past steps); record 1: 1 1 9 -1 (9 and -1 name no symbol).
    const float values[] = {2, 0, 3, 2, 1, 1, 1, 9, -1, 0};
    std::copy(values, values + 10, ids.data().data());
    FillUniform(&layer->params()[0].value, 4, 1.0f);
  }
};

TEST_CASE("embedding gradients for the table match central differences") {
  Embedding e;
  CHECK(e.layer->out_shape() == Shape{4, 3});
  Tensor r(e.layer->data().shape());
  FillUniform(&r, 8, 1.0f);
  Param& table = e.layer->params()[0];
  auto objective = [&] {
    e.layer->Forward(Phase::kTrain, e.srcs);
    double j = 0.0;
    for (size_t i = 0; i < r.size(); ++i) j += static_cast<double>(r[i]) * e.layer->data()[i];
    return j;
  };
  auto backward = [&] {
    e.layer->Forward(Phase::kTrain, e.srcs);
    std::copy(r.data(), r.data() + r.size(), e.layer->grad().data());
    table.grad.Fill(kPrefill);  // set, not added
    e.layer->Backward(e.srcs);
  };
  CheckGradients(objective, backward, {{"embedding.weight", &table.value, &table.grad}});
}

TEST_CASE("embedding maps each id to its row, an id out of range to zeros") {
  Embedding e;
  e.layer->Forward(Phase::kTest, e.srcs);
  const Tensor& table = e.layer->params()[0].value;
  const int expected[2][4] = {{2, 0, 3, 2}, {1, 1, -1, -1}};
  for (int r = 0; r < 2; ++r)
    for (int t = 0; t < 4; ++t)
      for (int k = 0; k < 3; ++k) {
        const float want = expected[r][t] < 0 ? 0.0f : table[expected[r][t] * 3 + k];
        CHECK(e.layer->data()[(r * 4 + t) * 3 + k] == want);
      }
}

}  // namespace
}  // namespace shoal
