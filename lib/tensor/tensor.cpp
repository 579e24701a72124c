#include "tensor/tensor.h"

#include <algorithm>

namespace shoal {

size_t NumElements(const Shape& shape) {
  size_t n = 1;
  for (int d : shape) n *= static_cast<size_t>(d);
  return n;
}

std::string ShapeToString(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

void Tensor::Fill(float value) { std::fill(at_, at_ + size(), value); }

}  // namespace shoal
