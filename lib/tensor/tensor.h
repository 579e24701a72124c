// A dense float32 tensor in row-major order. The first dimension of an
// activation is the batch; a layer's per-record shape leaves it out.
// Its values live in host memory that it owns (its home), or, while a
// device memory manager binds it (lib/device/step_memory.h), in that
// manager's memory: data() is wherever they are now.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace shoal {

// A tensor's values of kHugePage bytes or more are mapped on their own, on
// a huge page's boundary, and the kernel is advised to back them with huge
// pages. Where its transparent huge pages are on ("madvise" or "always"), a
// feature map's first touch then faults once per huge page rather than once
// per small page, and its sweeps miss the TLB less. Smaller blocks, and every
// block under AddressSanitizer, come from operator new. Throws
// std::bad_alloc, as new does.
constexpr size_t kHugePage = size_t{2} << 20;
void* AllocateBlock(size_t bytes);
void FreeBlock(void* block, size_t bytes);
// Whether blocks of kHugePage bytes or more are mapped (false under AddressSanitizer).
bool MapsLargeBlocks();

template <class T>
struct BlockAllocator {
  using value_type = T;
  BlockAllocator() = default;
  template <class U>
  BlockAllocator(const BlockAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(AllocateBlock(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { FreeBlock(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const BlockAllocator<U>&) const {
    return true;
  }
  template <class U>
  bool operator!=(const BlockAllocator<U>&) const {
    return false;
  }
};

using Shape = std::vector<int>;

size_t NumElements(const Shape& shape);
std::string ShapeToString(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Shape shape) : shape_(std::move(shape)), home_(NumElements(shape_), 0.0f) {
    at_ = home_.data();
  }
  // A copy is a tensor of its own, at home, whatever binds the original.
  Tensor(const Tensor& other) : shape_(other.shape_), home_(other.data(), other.data() + other.size()) {
    at_ = home_.data();
  }
  Tensor& operator=(const Tensor& other) {
    if (this != &other) {
      shape_ = other.shape_;
      home_.assign(other.data(), other.data() + other.size());
      at_ = home_.data();
    }
    return *this;
  }
  Tensor(Tensor&& other) noexcept { *this = std::move(other); }
  Tensor& operator=(Tensor&& other) noexcept {
    const bool bound = other.bound();
    shape_ = std::move(other.shape_);
    home_ = std::move(other.home_);
    at_ = bound ? other.at_ : home_.data();
    other.at_ = other.home_.data();
    return *this;
  }

  // Changes the shape, keeping the allocation when it is large enough (a
  // bound tensor's binding is dropped: its home holds the values again).
  void Reshape(const Shape& shape) {
    shape_ = shape;
    home_.resize(NumElements(shape_));
    at_ = home_.data();
  }
  void Fill(float value);

  const Shape& shape() const { return shape_; }
  int dim(size_t i) const { return shape_[i]; }
  size_t size() const { return home_.size(); }
  float* data() { return at_; }
  const float* data() const { return at_; }
  float& operator[](size_t i) { return at_[i]; }
  float operator[](size_t i) const { return at_[i]; }

  // Where the values are kept when nothing binds the tensor.
  float* home() { return home_.data(); }
  // Makes `memory` (size() floats) the tensor's values until Unbind.
  void Bind(float* memory) { at_ = memory; }
  void Unbind() { at_ = home_.data(); }
  bool bound() const { return at_ != home_.data(); }

 private:
  Shape shape_;
  std::vector<float, BlockAllocator<float>> home_;
  float* at_ = nullptr;  // home_.data() unless bound
};

}  // namespace shoal
