// The one numerical gradient checker every layer's test uses (Caffe's
// test_gradient_check_util.hpp idea): analytic gradients against central
// differences, and helpers that set a single layer up around it.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "config/fields.h"
#include "layers/layer.h"
#include "test_util.h"

namespace shoal {

// One tensor whose gradient is checked: its values are perturbed in place and
// `grad` holds the analytic d objective / d value after `backward` ran.
struct Variable {
  std::string name;
  Tensor* value;
  Tensor* grad;
};

constexpr double kStep = 1e-3;    // central-difference step (in float32 units)
constexpr double kRelTol = 1e-2;  // float32 forward passes: ~1e-2 relative
constexpr double kAbsTol = 2e-3;  // float32 rounding of the objective / kStep

struct GradientReport {
  size_t checked = 0;     // elements compared
  size_t mismatches = 0;  // elements outside tolerance
  size_t nonzero = 0;     // analytic gradients that are not ~0
  std::string first;      // the first mismatch, for the failure message
};

// Compares analytic gradients with central differences of `objective` for
// every element of every variable. `objective` runs a forward pass at the
// current values and returns a scalar; `backward` runs a forward pass at the
// current values and fills every variable's grad.
inline GradientReport CompareGradients(const std::function<double()>& objective,
                                       const std::function<void()>& backward,
                                       const std::vector<Variable>& vars) {
  GradientReport report;
  backward();
  std::vector<std::vector<float>> analytic;
  for (const auto& v : vars) {
    REQUIRE(v.value->size() == v.grad->size());
    analytic.emplace_back(v.grad->data(), v.grad->data() + v.grad->size());
  }
  for (size_t k = 0; k < vars.size(); ++k) {
    Tensor& x = *vars[k].value;
    for (size_t i = 0; i < x.size(); ++i) {
      const float saved = x[i];
      const float up = static_cast<float>(saved + kStep), down = static_cast<float>(saved - kStep);
      x[i] = up;
      const double plus = objective();
      x[i] = down;
      const double minus = objective();
      x[i] = saved;
      const double numeric = (plus - minus) / (static_cast<double>(up) - down);
      const double got = analytic[k][i];
      ++report.checked;
      if (std::fabs(got) > 1e-6) ++report.nonzero;
      const double tol = kAbsTol + kRelTol * std::max(std::fabs(numeric), std::fabs(got));
      if (std::fabs(got - numeric) > tol && report.mismatches++ == 0)
        report.first = "variable '" + vars[k].name + "' element " + std::to_string(i) + ": analytic " +
                       std::to_string(got) + ", numeric " + std::to_string(numeric);
    }
  }
  return report;
}

// The assertion every gradient test makes.
inline void CheckGradients(const std::function<double()>& objective, const std::function<void()>& backward,
                           const std::vector<Variable>& vars) {
  REQUIRE(!vars.empty());
  GradientReport r = CompareGradients(objective, backward, vars);
  INFO(r.mismatches << " of " << r.checked << " gradients differ; first: " << r.first);
  CHECK(r.mismatches == 0);
  // A backward that writes nothing would match a constant objective: refuse that.
  CHECK(r.nonzero > 0);
}

// ---------------------------------------------------------------------------
// Building single layers around the checker.

// A source whose feature the test sets and whose gradient the layer under test
// fills (a data layer wants no gradient, so it cannot stand in).
class InputLayer : public Layer {
 public:
  explicit InputLayer(Shape shape, const std::string& name = "input") {
    Init(name, "input");
    out_shape_ = std::move(shape);
  }
  Status Setup(const Fields&, const std::vector<const Layer*>&) override { return Status::Ok(); }
  void Forward(Phase, const std::vector<Layer*>&) override {}
  void Backward(const std::vector<Layer*>&) override {}
};

// Distinct values, at least `gap` apart and at least gap/2 from zero, in a
// fixed shuffled order: no ReLU or max-pool kink lies within kStep of any.
inline void FillDistinct(Tensor* t, uint32_t seed, double gap = 0.1) {
  const size_t n = t->size();
  std::vector<float> v(n);
  for (size_t k = 0; k < n; ++k) v[k] = static_cast<float>((static_cast<double>(k) - n / 2.0 + 0.5) * gap);
  std::mt19937 rng(seed);
  std::shuffle(v.begin(), v.end(), rng);
  std::copy(v.begin(), v.end(), t->data());
}

inline void FillUniform(Tensor* t, uint32_t seed, float bound) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-bound, bound);
  for (size_t i = 0; i < t->size(); ++i) (*t)[i] = u(rng);
}

inline std::unique_ptr<Layer> SetUpLayer(const std::string& type, const std::string& yaml_fields,
                                         const std::vector<const Layer*>& srcs) {
  auto layer = CreateLayer(type);
  REQUIRE(layer != nullptr);
  layer->Init("under_test", type);
  YamlFields fields_yaml(yaml_fields, "layer 'under_test'");
  const Fields& fields = *fields_yaml;
  Status s = layer->Setup(fields, srcs);
  INFO(s.ToString());
  REQUIRE(s.ok());
  layer->AllocateParams();
  REQUIRE(fields.CheckNoUnknown().ok());
  return layer;
}

constexpr float kPrefill = 0.25f;  // layers add into their sources' gradients

// Checks `layer`, allocated and its inputs' values set, under objective = Σ r·y
// with a fixed random r, so d objective / d y = r is what Backward receives:
// the gradients of every input (which Backward adds into) and of `params`
// (which it sets; Net does not clear them).
inline void CheckSumObjective(Layer* layer, const std::vector<InputLayer*>& inputs,
                              const std::vector<Param*>& params, Phase phase = Phase::kTrain) {
  Tensor r(layer->data().shape());
  FillUniform(&r, 3, 1.0f);
  const std::vector<Layer*> srcs(inputs.begin(), inputs.end());
  auto objective = [&] {
    layer->Forward(phase, srcs);
    double j = 0.0;
    for (size_t i = 0; i < r.size(); ++i) j += static_cast<double>(r[i]) * layer->data()[i];
    return j;
  };
  auto backward = [&] {
    layer->Forward(phase, srcs);
    std::copy(r.data(), r.data() + r.size(), layer->grad().data());
    for (InputLayer* in : inputs) in->grad().Fill(kPrefill);
    for (Param* p : params) p->grad.Fill(kPrefill);
    layer->Backward(srcs);
    for (InputLayer* in : inputs)
      for (size_t i = 0; i < in->grad().size(); ++i) in->grad()[i] -= kPrefill;
  };
  std::vector<Variable> vars;
  for (InputLayer* in : inputs) vars.push_back({in->name(), &in->data(), &in->grad()});
  for (Param* p : params) vars.push_back({p->name, &p->value, &p->grad});
  CheckGradients(objective, backward, vars);
}

// Checks a layer that maps one input to a feature, every parameter's gradient too.
inline void CheckOneInputLayer(const std::string& type, const std::string& yaml_fields, const Shape& in_shape,
                               int batch, Phase phase = Phase::kTrain) {
  InputLayer input(in_shape);
  auto layer = SetUpLayer(type, yaml_fields, {&input});
  input.Allocate(batch);
  layer->Allocate(batch);
  FillDistinct(&input.data(), 7);
  std::vector<Param*> params;
  for (size_t k = 0; k < layer->params().size(); ++k) {
    FillUniform(&layer->params()[k].value, 100 + static_cast<uint32_t>(k), 0.5f);
    params.push_back(&layer->params()[k]);
  }
  CheckSumObjective(layer.get(), {&input}, params, phase);
}

}  // namespace shoal
