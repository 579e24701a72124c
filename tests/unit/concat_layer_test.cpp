// Tests for lib/layers/concat_layer.cpp: shapes, the forward layout, and the
// gradients of every source against central differences.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "config/fields.h"
#include "layers/layer.h"
#include "test_util.h"

namespace shoal {
namespace {

// A source whose feature the test sets and whose gradient concat fills.
class Source : public Layer {
 public:
  Source(const std::string& name, Shape shape) {
    Init(name, "source");
    out_shape_ = std::move(shape);
  }
  Status Setup(const Fields&, const std::vector<const Layer*>&) override { return Status::Ok(); }
  void Forward(Phase, const std::vector<Layer*>&) override {}
  void Backward(const std::vector<Layer*>&) override {}
};

Status SetUpConcat(Layer* layer, const std::vector<const Layer*>& srcs) {
  layer->Init("join", "concat");
  YamlFields fields_yaml("{name: join, type: concat}", "layer 'join'");
  const Fields& fields = *fields_yaml;
  fields.Has("name");
  fields.Has("type");
  SHOAL_RETURN_IF_ERROR(layer->Setup(fields, srcs));
  return fields.CheckNoUnknown();
}

void FillUniform(Tensor* t, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (size_t i = 0; i < t->size(); ++i) (*t)[i] = u(rng);
}

TEST_CASE("concat joins [C,H,W] sources along channels, record by record") {
  Source a("a", {2, 2, 3}), b("b", {1, 2, 3});
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
  Source a("a", {2, 4, 4}), b("b", {2, 3, 4}), v("v", {8});
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
  Source a("a", {2, 3, 3}), b("b", {3, 3, 3}), c("c", {1, 3, 3});
  auto join = CreateLayer("concat");
  REQUIRE(SetUpConcat(join.get(), {&a, &b, &c}).ok());
  const int batch = 3;
  std::vector<Source*> sources{&a, &b, &c};
  std::vector<Layer*> srcs{&a, &b, &c};
  for (size_t k = 0; k < sources.size(); ++k) {
    sources[k]->Allocate(batch);
    FillUniform(&sources[k]->data(), 10 + static_cast<uint32_t>(k));
  }
  join->Allocate(batch);
  Tensor r(join->data().shape());
  FillUniform(&r, 3);
  // objective = Σ r·y², so the gradient reaching a source depends on where its
  // values landed: a misplaced slice cannot pass.
  auto objective = [&] {
    join->Forward(Phase::kTrain, srcs);
    double j = 0.0;
    for (size_t i = 0; i < r.size(); ++i) j += r[i] * join->data()[i] * join->data()[i];
    return j;
  };
  join->Forward(Phase::kTrain, srcs);
  for (size_t i = 0; i < r.size(); ++i) join->grad()[i] = 2.0f * r[i] * join->data()[i];
  const float prefill = 0.25f;  // concat adds into its sources' gradients
  for (auto* s : sources) s->grad().Fill(prefill);
  join->Backward(srcs);
  const double step = 1e-3;
  size_t checked = 0, mismatches = 0;
  for (auto* s : sources) {
    for (size_t i = 0; i < s->data().size(); ++i) {
      const float saved = s->data()[i];
      s->data()[i] = static_cast<float>(saved + step);
      const double plus = objective();
      s->data()[i] = static_cast<float>(saved - step);
      const double minus = objective();
      s->data()[i] = saved;
      const double numeric = (plus - minus) / (2 * step);
      const double analytic = s->grad()[i] - prefill;
      ++checked;
      if (std::fabs(numeric - analytic) > 2e-3 + 1e-2 * std::fabs(numeric)) {
        INFO("source '" << s->name() << "' element " << i << ": analytic " << analytic << ", numeric "
                        << numeric);
        CHECK(false);
        ++mismatches;
      }
    }
  }
  CHECK(checked == 3 * (18 + 27 + 9));
  CHECK(mismatches == 0);
}

}  // namespace
}  // namespace shoal
