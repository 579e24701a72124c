#include "tensor/tensor.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <new>

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

namespace {

// A sanitizer keeps watch over operator new's blocks only.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

bool Mapped(size_t bytes) { return MapsLargeBlocks() && bytes >= kHugePage; }

size_t MappedLength(size_t bytes) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

}  // namespace

bool MapsLargeBlocks() { return !kSanitized; }

// A mapping one huge page longer than the block, trimmed to start on a huge
// page's boundary and to end with the block. A last huge page that the block
// fills only in part stays in small pages, so no memory is wasted on it.
void* AllocateBlock(size_t bytes) {
  if (!Mapped(bytes)) return ::operator new(bytes);
  const size_t length = MappedLength(bytes);
  void* map = mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) throw std::bad_alloc();
  char* const first = static_cast<char*>(map);
  char* const block = first + (kHugePage - reinterpret_cast<uintptr_t>(first) % kHugePage) % kHugePage;
  if (block > first) munmap(first, block - first);
  munmap(block + length, first + kHugePage - block);  // the rest: never empty
  // Advice only: where transparent huge pages are off, it changes nothing.
  madvise(block, length, MADV_HUGEPAGE);
  return block;
}

void FreeBlock(void* block, size_t bytes) {
  if (Mapped(bytes))
    munmap(block, MappedLength(bytes));
  else
    ::operator delete(block);
}

void Tensor::Fill(float value) { std::fill(at_, at_ + size(), value); }

}  // namespace shoal
