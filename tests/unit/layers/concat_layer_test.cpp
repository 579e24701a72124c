// Tests for lib/layers/concat_layer.cpp: shapes, the forward layout, and the
// gradients of every source against central differences.
#include <doctest/doctest.h>

#include "gradient_check.h"

namespace shoal {
namespace {

Status SetUpConcat(Layer* layer, const std::vector<const Layer*>& srcs) {
  layer->Init("join", "concat");
  YamlFields fields_yaml("{name: join, type: concat}", "layer 'join'");
  const Fields& fields = *fields_yaml;
  fields.Has("name");
  fields.Has("type");
  SHOAL_RETURN_IF_ERROR(layer->Setup(fields, srcs));
  return fields.CheckNoUnknown();
}

TEST_CASE("concat joins [C,H,W] sources along channels, record by record") {
  InputLayer a({2, 2, 3}, "a"), b({1, 2, 3}, "b");
  auto join = CreateLayer("concat");
  REQUIRE(join != nullptr);
  REQUIRE(SetUpConcat(join.get(), {&a, &b}).ok());
  CHECK(join->out_shape() == Shape{3, 2, 3});
  CHECK(join->param_count() == 0);
  const int batch = 2;
  a.Allocate(batch);
  b.Allocate(batch);
  join->Allocate(batch);
  for (size_t i = 0; i < a.data().size(); ++i) a.data()[i] = static_cast<float>(i);
  for (size_t i = 0; i < b.data().size(); ++i) b.data()[i] = 100.0f + i;
  std::vector<Layer*> srcs{&a, &b};
  join->Forward(Phase::kTrain, srcs);
  // Record 1: a's 12 floats of record 1, then b's 6 of record 1.
  CHECK(join->data()[18] == 12.0f);
  CHECK(join->data()[29] == 23.0f);
  CHECK(join->data()[30] == 106.0f);
  CHECK(join->data()[35] == 111.0f);
  CHECK(join->data()[17] == 105.0f);
}

TEST_CASE("concat refuses sources that disagree beyond the first axis, naming them") {
  InputLayer a({2, 4, 4}, "a"), b({2, 3, 4}, "b"), v({8}, "v");
  auto join = CreateLayer("concat");
  Status s = SetUpConcat(join.get(), {&a, &b});
  CHECK(!s.ok());
  CHECK(s.message().find("'b' gives [2,3,4]") != std::string::npos);
  join = CreateLayer("concat");
  CHECK(!SetUpConcat(join.get(), {&a, &v}).ok());
  join = CreateLayer("concat");
  CHECK(!SetUpConcat(join.get(), {}).ok());
}

TEST_CASE("concat gradients match central differences for every source") {
  InputLayer a({2, 3, 3}, "a"), b({3, 3, 3}, "b"), c({1, 3, 3}, "c");
  auto join = CreateLayer("concat");
  REQUIRE(SetUpConcat(join.get(), {&a, &b, &c}).ok());
  const int batch = 3;
  std::vector<InputLayer*> sources{&a, &b, &c};
  std::vector<Layer*> srcs{&a, &b, &c};
  for (size_t k = 0; k < sources.size(); ++k) {
    sources[k]->Allocate(batch);
    FillUniform(&sources[k]->data(), 10 + static_cast<uint32_t>(k), 1.0f);
  }
  join->Allocate(batch);
  Tensor r(join->data().shape());
  FillUniform(&r, 3, 1.0f);
  // objective = Σ r·y², so the gradient reaching a source depends on where its
  // values landed: a misplaced slice cannot pass.
  auto objective = [&] {
    join->Forward(Phase::kTrain, srcs);
    double j = 0.0;
    for (size_t i = 0; i < r.size(); ++i) j += r[i] * join->data()[i] * join->data()[i];
    return j;
  };
  auto backward = [&] {
    join->Forward(Phase::kTrain, srcs);
    for (size_t i = 0; i < r.size(); ++i) join->grad()[i] = 2.0f * r[i] * join->data()[i];
    for (auto* s : sources) s->grad().Fill(kPrefill);  // concat adds into its sources' gradients
    join->Backward(srcs);
    for (auto* s : sources)
      for (size_t i = 0; i < s->grad().size(); ++i) s->grad()[i] -= kPrefill;
  };
  std::vector<Variable> vars;
  for (auto* s : sources) vars.push_back({s->name(), &s->data(), &s->grad()});
  CheckGradients(objective, backward, vars);
}

}  // namespace
}  // namespace shoal
