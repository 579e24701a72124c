// Tests for lib/layers/registry.cpp: every registered layer type creates a
// layer of that type, and each (but data, which has no gradient) has its
// gradients checked in the test file that mirrors its source (rbm, which
// has no objective to differentiate, its CD estimator's expectation).
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "layers/layer.h"

namespace shoal {
namespace {

// Where each type's gradients are checked.
const std::map<std::string, std::string> kGradientChecked = {
    {"fully_connected", "layers/fully_connected_layer_test.cpp"},
    {"convolution", "layers/convolution_layer_test.cpp"},
    {"pooling", "layers/pooling_layer_test.cpp"},
    {"relu", "layers/elementwise_layers_test.cpp"},
    {"dropout", "layers/elementwise_layers_test.cpp"},
    {"flatten", "layers/elementwise_layers_test.cpp"},
    {"softmax_loss", "layers/softmax_loss_layer_test.cpp"},
    {"concat", "layers/concat_layer_test.cpp"},
    {"rbm", "layers/rbm_layer_test.cpp"},
    {"sigmoid", "layers/elementwise_layers_test.cpp"},
    {"euclidean_loss", "layers/reconstruction_loss_layers_test.cpp"},
    {"sigmoid_cross_entropy_loss", "layers/reconstruction_loss_layers_test.cpp"},
    {"gru", "layers/gru_layer_test.cpp"},
    {"embedding", "layers/embedding_layer_test.cpp"},
    {"add", "layers/add_layer_test.cpp"},
    {"lrn", "layers/lrn_layer_test.cpp"},
    {"batch_norm", "layers/batch_norm_layer_test.cpp"},
};

std::string TestSource(const std::string& file) {
  std::ifstream in(std::string(SHOAL_SOURCE_DIR) + "/tests/unit/" + file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST_CASE("every registered layer type creates a layer of that type, and each is gradient-checked") {
  const auto& types = LayerTypes();
  std::set<std::string> unique(types.begin(), types.end());
  CHECK(unique.size() == types.size());
  for (const auto& type : types) {
    INFO("type '" << type << "'");
    auto layer = CreateLayer(type);
    CHECK(layer != nullptr);
    if (type == "data") continue;
    REQUIRE(kGradientChecked.count(type) == 1);
    // Its test file names it where it checks its gradients.
    const std::string source = TestSource(kGradientChecked.at(type));
    CHECK(source.find("\"" + type + "\"") != std::string::npos);
    CHECK((source.find("CheckOneInputLayer(") != std::string::npos ||
           source.find("CheckGradients(") != std::string::npos ||
           source.find("CheckSumObjective(") != std::string::npos ||
           source.find("CheckContrastiveDivergence(") != std::string::npos));
  }
  for (const auto& checked : kGradientChecked) {
    const auto& type = checked.first;
    INFO("gradient-checked type '" << type << "' is not registered");
    CHECK(unique.count(type) == 1);
  }
  CHECK(unique.count("data") == 1);
  CHECK(CreateLayer("no_such_layer") == nullptr);
  CHECK(CreateLayer("") == nullptr);
}

}  // namespace
}  // namespace shoal
