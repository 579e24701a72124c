// A dense float32 tensor in row-major order. The first dimension of an
// activation is the batch; a layer's per-record shape leaves it out.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace shoal {

using Shape = std::vector<int>;

size_t NumElements(const Shape& shape);
std::string ShapeToString(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Shape shape) : shape_(std::move(shape)), data_(NumElements(shape_), 0.0f) {}

  // Changes the shape, keeping the allocation when it is large enough.
  void Reshape(const Shape& shape) {
    shape_ = shape;
    data_.resize(NumElements(shape_));
  }
  void Fill(float value);

  const Shape& shape() const { return shape_; }
  int dim(size_t i) const { return shape_[i]; }
  size_t size() const { return data_.size(); }
  float* data() { return data_.data(); }
  const float* data() const { return data_.data(); }
  float& operator[](size_t i) { return data_[i]; }
  float operator[](size_t i) const { return data_[i]; }

 private:
  Shape shape_;
  std::vector<float> data_;
};

}  // namespace shoal
