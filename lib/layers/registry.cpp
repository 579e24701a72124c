// The table of layer types. Adding a type: its own .cpp, a constructor in
// layer_types.h, a row here, and its test file tests/unit/layers/<file>_test.cpp
// with a gradient check (named in tests/unit/layers/registry_test.cpp).
#include "layers/data_layer.h"
#include "layers/layer_types.h"
#include "layers/softmax_loss_layer.h"

namespace shoal {
namespace {

struct LayerType {
  const char* name;
  std::unique_ptr<Layer> (*create)();
};

const LayerType kLayerTypes[] = {
    {"data", NewDataLayer},
    {"fully_connected", NewFullyConnectedLayer},
    {"convolution", NewConvolutionLayer},
    {"pooling", NewPoolingLayer},
    {"relu", NewReluLayer},
    {"dropout", NewDropoutLayer},
    {"flatten", NewFlattenLayer},
    {"softmax_loss", NewSoftmaxLossLayer},
    {"concat", NewConcatLayer},
    {"rbm", NewRbmLayer},
    {"sigmoid", NewSigmoidLayer},
    {"euclidean_loss", NewEuclideanLossLayer},
    {"sigmoid_cross_entropy_loss", NewSigmoidCrossEntropyLossLayer},
    {"gru", NewGruLayer},
    {"embedding", NewEmbeddingLayer},
    {"add", NewAddLayer},
    {"lrn", NewLrnLayer},
    {"batch_norm", NewBatchNormLayer},
};
static_assert(
    sizeof(kLayerTypes) / sizeof(kLayerTypes[0]) == 18,
    "every layer type has a row; add its gradient check to tests/unit/layers/registry_test.cpp too");

}  // namespace

std::unique_ptr<Layer> NewDataLayer() { return std::make_unique<DataLayer>(); }
std::unique_ptr<Layer> NewSoftmaxLossLayer() { return std::make_unique<SoftmaxLossLayer>(); }

std::unique_ptr<Layer> CreateLayer(const std::string& type) {
  for (const auto& t : kLayerTypes)
    if (type == t.name) return t.create();
  return nullptr;
}

const std::vector<std::string>& LayerTypes() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& t : kLayerTypes) v.push_back(t.name);
    return v;
  }();
  return names;
}

}  // namespace shoal
