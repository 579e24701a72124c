// The layers that mirror a PyTorch module, against that module's outputs and
// gradients on the same values: torch_reference.json, written by
// torch_reference.py beside it. Within 1e-5 of the largest magnitude compared.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gradient_check.h"

namespace shoal {
namespace {

nlohmann::json LoadReference() {
  std::ifstream in(std::string(SHOAL_SOURCE_DIR) + "/tests/unit/layers/torch_reference.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

void Fill(Tensor* t, const nlohmann::json& values) {
  REQUIRE(values.size() == t->size());
  for (size_t i = 0; i < t->size(); ++i) (*t)[i] = values[i].get<float>();
}

void CheckNear(const float* got, const nlohmann::json& want, const std::string& what) {
  double largest = 0.0;
  for (const auto& v : want) largest = std::max(largest, std::fabs(v.get<double>()));
  size_t off = 0;
  std::string first;
  for (size_t i = 0; i < want.size(); ++i)
    if (std::fabs(got[i] - want[i].get<double>()) > 1e-5 * std::max(largest, 1.0) && off++ == 0)
      first = "element " + std::to_string(i) + ": " + std::to_string(got[i]) + ", PyTorch " +
              std::to_string(want[i].get<double>());
  INFO(what << ": " << off << " of " << want.size() << " differ; first " << first);
  CHECK(off == 0);
}

// A parameter's name less its layer's: "weight", "running_mean".
std::string Suffix(const Param& p) { return p.name.substr(p.name.find('.') + 1); }

TEST_CASE("layers agree with PyTorch's modules, forward and backward") {
  const nlohmann::json reference = LoadReference();
  for (const auto& c : reference["cases"]) {
    const std::string name = c["name"];
    INFO("case '" << name << "' (layer " << c["type"].get<std::string>() << " "
                  << c["fields"].get<std::string>() << ")");
    InputLayer input(c["shape"].get<Shape>());
    auto layer = SetUpLayer(c["type"], c["fields"], {&input});
    const int batch = c["batch"];
    input.Allocate(batch);
    layer->Allocate(batch);
    Fill(&input.data(), c["x"]);
    for (auto& p : layer->params())
      Fill(&p.value, c["params"].at(p.name.substr(p.name.find('.') + 1))["value"]);
    std::vector<Layer*> srcs{&input};
    const Phase phase = c["phase"] == "test" ? Phase::kTest : Phase::kTrain;
    layer->Forward(phase, srcs);
    REQUIRE(layer->data().size() == c["y"].size());
    CheckNear(layer->data().data(), c["y"], "y");
    if (phase == Phase::kTest) continue;  // a training pass's backward only
    Fill(&layer->grad(), c["r"]);
    input.grad().Fill(0.0f);
    layer->Backward(srcs);
    CheckNear(input.grad().data(), c["dx"], "dx");
    for (auto& p : layer->params()) {
      const nlohmann::json& want = c["params"].at(Suffix(p));
      if (p.role == ParamRole::kTrained) {
        CheckNear(p.grad.data(), want["grad"], p.name + " grad");
        continue;
      }
      // A running average's gradient is its change: old − gradient is PyTorch's buffer after the pass.
      std::vector<float> after(p.value.size());
      for (size_t i = 0; i < after.size(); ++i) after[i] = p.value[i] - p.grad[i];
      CheckNear(after.data(), want["after"], p.name + " after the pass");
    }
  }
}

}  // namespace
}  // namespace shoal
