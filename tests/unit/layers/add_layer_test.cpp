// Tests for lib/layers/add_layer.cpp.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "gradient_check.h"
#include "ops/blas.h"
#include "test_util.h"

namespace shoal {
namespace {

// What a ReLU after an add gives: its feature, and its sources' gradients.
struct SameInputs {
  Tensor y;
  std::vector<Tensor> grads;
};

TEST_CASE("add sums its sources and gives each the sum's gradient") {
  InputLayer a({2, 3}, "a"), b({2, 3}, "b"), c({2, 3}, "c");
  auto layer = SetUpLayer("add", "{}", {&a, &b, &c});
  CHECK(layer->out_shape() == Shape{2, 3});
  for (InputLayer* in : {&a, &b, &c}) in->Allocate(2);
  layer->Allocate(2);
  FillDistinct(&a.data(), 1);
  FillDistinct(&b.data(), 2);
  FillDistinct(&c.data(), 3);
  CheckSumObjective(layer.get(), {&a, &b, &c}, {});
  layer->Forward(Phase::kTrain, {&a, &b, &c});
  CHECK(layer->data()[4] == a.data()[4] + b.data()[4] + c.data()[4]);
}

TEST_CASE("a ReLU fused into add computes every value as the two layers do apart") {
  // 2 sources (the one-pass path) and 3; 37 values (the vector loops and their
  // tails), and enough at 2 threads to split the pass between them.
  for (const auto& [sources_at, size_at, threads] :
       {std::tuple{2, 37, 1}, {3, 37, 1}, {2, 40001, 2}, {3, 40001, 2}}) {
    const int sources = sources_at, size = size_at;  // copies the lambda below may capture (C++17)
    CAPTURE(sources);
    CAPTURE(size);
    SetComputeThreads(threads);
    auto run = [&](bool fused) {
      std::vector<std::unique_ptr<InputLayer>> inputs;
      std::vector<Layer*> srcs;
      std::vector<const Layer*> setup_srcs;
      for (int k = 0; k < sources; ++k) {
        inputs.push_back(std::make_unique<InputLayer>(Shape{size}, "in" + std::to_string(k)));
        inputs.back()->Allocate(2);
        FillUniform(&inputs.back()->data(), 11 + k, 1.0f);  // both signs: part of the sum is cut
        srcs.push_back(inputs.back().get());
        setup_srcs.push_back(inputs.back().get());
      }
      auto sum = SetUpLayer("add", "{}", setup_srcs);
      auto relu = SetUpLayer("relu", "{}", {sum.get()});
      sum->Allocate(2);
      relu->Allocate(2);
      if (fused) sum->set_fused_relu(relu.get());
      sum->Forward(Phase::kTrain, srcs);
      if (!fused) relu->Forward(Phase::kTrain, {sum.get()});
      FillUniform(&relu->grad(), 7, 1.0f);
      sum->grad().Fill(0.0f);
      for (auto& in : inputs) in->grad().Fill(0.5f);  // added to
      if (!fused) relu->Backward({sum.get()});
      sum->Backward(srcs);
      SameInputs out{relu->data(), {}};
      for (auto& in : inputs) out.grads.push_back(in->grad());
      return out;
    };
    const SameInputs apart = run(false), fused = run(true);
    CHECK(SameBits(apart.y, fused.y));
    int zeros = 0;
    for (size_t i = 0; i < fused.y.size(); ++i) zeros += fused.y[i] == 0.0f;
    CHECK(zeros > 0);
    CHECK(zeros < static_cast<int>(fused.y.size()));
    for (int k = 0; k < sources; ++k) CHECK(SameBits(apart.grads[k], fused.grads[k]));
    SetComputeThreads(1);
  }
}

TEST_CASE("add refuses sources of different shapes and a single source") {
  InputLayer a({2, 3}, "a"), b({3, 2}, "b");
  auto layer = CreateLayer("add");
  layer->Init("sum", "add");
  YamlFields f("{}", "layer 'sum'");
  const Status s = layer->Setup(*f, {&a, &b});
  INFO(s.ToString());
  CHECK(s.ToString().find("'b' gives [3,2], which is not the shape of 'a' [2,3]") != std::string::npos);
  CHECK(layer->Setup(*f, {&a}).ToString().find("at least two source layers") != std::string::npos);
}

}  // namespace
}  // namespace shoal
