#include "ops/onednn_matmul.h"

#if SHOAL_HAVE_ONEDNN
#include <cstdint>
#include <cstring>
#include <dnnl.hpp>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "ops/onednn.h"

namespace shoal {
namespace {

using dnnl::memory;
using Dims = memory::dims;

struct Shape {
  bool trans_a, trans_b;
  int m, n, k, lda, ldb, ldc;
  float alpha, beta;
  auto Tie() const { return std::tie(trans_a, trans_b, m, n, k, lda, ldb, ldc, alpha, beta); }
  bool operator==(const Shape& o) const { return Tie() == o.Tie(); }
};

struct ShapeHash {
  size_t operator()(const Shape& s) const {
    size_t h = s.trans_a * 2 + s.trans_b;
    for (int v : {s.m, s.n, s.k, s.lda, s.ldb, s.ldc}) h = h * 1000003u + static_cast<size_t>(v);
    uint32_t alpha, beta;
    std::memcpy(&alpha, &s.alpha, sizeof alpha);
    std::memcpy(&beta, &s.beta, sizeof beta);
    return (h * 1000003u + alpha) * 1000003u + beta;
  }
};

// One shape's primitive: the caller's float32 A and B reordered into
// bfloat16 copies, all bound per call. The copies lie in one buffer per
// thread that every shape shares, so that a thread holds one copy of its
// largest operands, not one of each shape's.
struct Matmul {
  memory a_user, b_user, c_user, a, b;
  size_t a_bytes = 0, b_bytes = 0;  // each rounded up to a cache line
  dnnl::reorder to_a, to_b;
  dnnl::matmul product;
};

size_t CacheLines(size_t bytes) { return (bytes + 63) / 64 * 64; }

// A row-major matrix of rows x cols with leading dimension ld, or its
// transpose stored that way, as a float32 descriptor of op(X).
memory::desc Strided(int rows, int cols, int ld, bool trans) {
  return {Dims{rows, cols}, memory::data_type::f32, trans ? Dims{1, ld} : Dims{ld, 1}};
}

std::unique_ptr<Matmul> Make(const Shape& s) {
  // The bfloat16 copies keep the order of the caller's matrices: a reorder
  // that also transposed (into the blocked layouts the matmul would choose)
  // costs more than the product it serves.
  const auto bf16 = memory::data_type::bf16;
  const auto order = [](bool trans) { return trans ? memory::format_tag::ba : memory::format_tag::ab; };
  dnnl::primitive_attr attr;
  if (s.alpha != 1.0f) attr.set_output_scales(0, {s.alpha});
  if (s.beta != 0.0f) {
    dnnl::post_ops sum;
    sum.append_sum(s.beta);
    attr.set_post_ops(sum);
  }
  const memory::desc c = Strided(s.m, s.n, s.ldc, false);
  const dnnl::matmul::primitive_desc pd(
      dnnl::matmul::desc(memory::desc({s.m, s.k}, bf16, order(s.trans_a)),
                         memory::desc({s.k, s.n}, bf16, order(s.trans_b)), c),
      attr, OneDnnEngine());
  auto made = std::make_unique<Matmul>();
  made->a_user = memory(Strided(s.m, s.k, s.lda, s.trans_a), OneDnnEngine(), DNNL_MEMORY_NONE);
  made->b_user = memory(Strided(s.k, s.n, s.ldb, s.trans_b), OneDnnEngine(), DNNL_MEMORY_NONE);
  made->c_user = memory(c, OneDnnEngine(), DNNL_MEMORY_NONE);
  made->a = memory(pd.src_desc(), OneDnnEngine(), DNNL_MEMORY_NONE);
  made->b = memory(pd.weights_desc(), OneDnnEngine(), DNNL_MEMORY_NONE);
  made->a_bytes = CacheLines(pd.src_desc().get_size());
  made->b_bytes = CacheLines(pd.weights_desc().get_size());
  made->to_a = dnnl::reorder(made->a_user, made->a);
  made->to_b = dnnl::reorder(made->b_user, made->b);
  made->product = dnnl::matmul(pd);
  return made;
}

}  // namespace

bool OneDnnMatmulBf16(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                      const float* b, int ldb, float beta, float* c, int ldc) {
  if (!Bf16Kernels()) return false;
  // Sgemm runs on many threads at once (ParallelFor's): each keeps its own.
  thread_local std::unordered_map<Shape, std::unique_ptr<Matmul>, ShapeHash> made;
  thread_local dnnl::stream stream(OneDnnEngine());
  thread_local std::vector<uint8_t> copies;  // A's and B's, a cache line aligned
  const Shape shape{trans_a, trans_b, m, n, k, lda, ldb, ldc, alpha, beta};
  auto it = made.find(shape);
  if (it == made.end()) {
    std::unique_ptr<Matmul> matmul;
    try {
      matmul = Make(shape);
    } catch (const dnnl::error&) {
      matmul = nullptr;  // no primitive for this shape: float32 computes it
    }
    it = made.emplace(shape, std::move(matmul)).first;
  }
  Matmul* p = it->second.get();
  if (!p) return false;
  p->a_user.set_data_handle(const_cast<float*>(a));
  p->b_user.set_data_handle(const_cast<float*>(b));
  p->c_user.set_data_handle(c);
  if (copies.size() < p->a_bytes + p->b_bytes + 64) copies.resize(p->a_bytes + p->b_bytes + 64);
  uint8_t* aligned = copies.data() + (64 - reinterpret_cast<uintptr_t>(copies.data()) % 64) % 64;
  p->a.set_data_handle(aligned);
  p->b.set_data_handle(aligned + p->a_bytes);
  p->to_a.execute(stream, p->a_user, p->a);
  p->to_b.execute(stream, p->b_user, p->b);
  p->product.execute(stream, {{DNNL_ARG_SRC, p->a}, {DNNL_ARG_WEIGHTS, p->b}, {DNNL_ARG_DST, p->c_user}});
  stream.wait();
  return true;
}

}  // namespace shoal

#else  // no oneDNN in this build

namespace shoal {
bool OneDnnMatmulBf16(bool, bool, int, int, int, float, const float*, int, const float*, int, float, float*,
                      int) {
  return false;
}
}  // namespace shoal

#endif
