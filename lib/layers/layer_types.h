// Constructors of the layer types; the table that names them is registry.cpp.
#pragma once

#include <memory>

#include "layers/layer.h"

namespace shoal {

std::unique_ptr<Layer> NewDataLayer();
std::unique_ptr<Layer> NewFullyConnectedLayer();
std::unique_ptr<Layer> NewConvolutionLayer();
std::unique_ptr<Layer> NewPoolingLayer();
std::unique_ptr<Layer> NewReluLayer();
std::unique_ptr<Layer> NewDropoutLayer();
std::unique_ptr<Layer> NewFlattenLayer();
std::unique_ptr<Layer> NewSoftmaxLossLayer();
std::unique_ptr<Layer> NewConcatLayer();
std::unique_ptr<Layer> NewRbmLayer();
std::unique_ptr<Layer> NewSigmoidLayer();
std::unique_ptr<Layer> NewEuclideanLossLayer();
std::unique_ptr<Layer> NewSigmoidCrossEntropyLossLayer();
std::unique_ptr<Layer> NewGruLayer();
std::unique_ptr<Layer> NewEmbeddingLayer();
std::unique_ptr<Layer> NewAddLayer();
std::unique_ptr<Layer> NewLrnLayer();
std::unique_ptr<Layer> NewBatchNormLayer();

}  // namespace shoal
