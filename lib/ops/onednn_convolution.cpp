#include "ops/onednn_convolution.h"

#if SHOAL_HAVE_ONEDNN
#include <dnnl.hpp>
#include <map>
#include <optional>

#include "ops/blas.h"
#include "ops/gpu_ops.h"
#include "ops/onednn.h"

namespace shoal {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using Args = std::unordered_map<int, memory>;

memory::desc Plain(const memory::dims& dims, Tag tag) { return {dims, memory::data_type::f32, tag}; }

// One tensor between shoal's plain layout (the user's pointer, bound per
// call) and the layout a primitive wants: when they differ, a buffer of the
// primitive's own and the reorder between them (an input's into it, an
// output's out of it, adding to what the user's tensor holds when asked).
class Edge {
 public:
  Edge(const memory::desc& user, const memory::desc& want, bool input, bool accumulate = false)
      : user_(user, OneDnnEngine(), DNNL_MEMORY_NONE), reordered_(accumulate || want != user) {
    inner_ = reordered_ ? memory(want, OneDnnEngine()) : user_;
    if (!reordered_) return;
    dnnl::primitive_attr attr;
    if (accumulate) {
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
    reorder_ = input ? dnnl::reorder(user_, inner_, attr) : dnnl::reorder(inner_, user_, attr);
  }
  const memory& Bind(const void* data) {
    user_.set_data_handle(const_cast<void*>(data));
    return inner_;
  }
  void In(dnnl::stream& s) {
    if (reordered_) reorder_.execute(s, user_, inner_);
  }
  void Out(dnnl::stream& s) {
    if (reordered_) reorder_.execute(s, inner_, user_);
  }
  const memory& inner() const { return inner_; }

 private:
  memory user_, inner_;
  bool reordered_;
  dnnl::reorder reorder_;
};

// The backward primitives and edges of one batch size, made on the first
// Backward (an evaluation's batch size never needs them).
struct BackwardPrims {
  GradWrite dx_write;  // a layer's never changes; made again if it did
  dnnl::convolution_backward_weights weights;
  dnnl::convolution_backward_data data;
  std::optional<Edge> diff_dst, diff_weights, diff_bias;  // backward weights
  std::optional<Edge> src;                                // when it wants x in another layout than forward
  std::optional<Edge> data_diff_dst, data_weights,
      diff_src;  // backward data (diff_src adds into dx, or sets it)
};

// The primitives and edges of one batch size.
struct Prims {
  dnnl::convolution_forward::primitive_desc fwd_pd;
  dnnl::convolution_forward fwd;
  std::optional<Edge> src, weights, bias, dst;
  std::unique_ptr<BackwardPrims> bwd;
};

class Convolution final : public FastConvolution {
 public:
  // Its inputs in bfloat16 under Precision::kBf16 (ops/blas.h), its outputs
  // and gradients float32 either way.
  explicit Convolution(const ConvGeometry& g)
      : g_(g),
        in_(ComputePrecision() == Precision::kBf16 ? memory::data_type::bf16 : memory::data_type::f32),
        stream_(OneDnnEngine()) {}

  bool Forward(int batch, const float* x, const float* w, const float* b, float* y) override {
    if (CurrentGpuOps()) return false;
    SetOneDnnThreads(ComputeThreads());  // before For: primitives plan for the threads they will have
    Prims* p = For(batch);
    if (!p) return false;
    const memory& src = p->src->Bind(x);
    const memory& weights = p->weights->Bind(w);
    const memory& bias = p->bias->Bind(b);
    const memory& dst = p->dst->Bind(y);
    p->src->In(stream_);
    p->weights->In(stream_);
    p->bias->In(stream_);
    p->fwd.execute(
        stream_,
        Args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_BIAS, bias}, {DNNL_ARG_DST, dst}});
    p->dst->Out(stream_);
    stream_.wait();
    return true;
  }

  void Backward(int batch, const float* x, const float* w, const float* dy, float* dx, GradWrite dx_write,
                float* dw, float* db) override {
    SetOneDnnThreads(ComputeThreads());
    Prims* p = For(batch);
    if (!p->bwd || p->bwd->dx_write != dx_write) p->bwd = MakeBackward(batch, p->fwd_pd, dx_write);
    BackwardPrims& b = *p->bwd;
    const memory& diff_dst = b.diff_dst->Bind(dy);
    b.diff_dst->In(stream_);
    // Forward's reordered copies hold x and w still; where none was needed
    // the plain tensors are used in place, wherever they are now.
    memory src = p->src->Bind(x);
    if (b.src) {
      src = b.src->Bind(x);
      b.src->In(stream_);
    }
    const memory& diff_weights = b.diff_weights->Bind(dw);
    const memory& diff_bias = b.diff_bias->Bind(db);
    b.weights.execute(stream_, Args{{DNNL_ARG_SRC, src},
                                    {DNNL_ARG_DIFF_DST, diff_dst},
                                    {DNNL_ARG_DIFF_WEIGHTS, diff_weights},
                                    {DNNL_ARG_DIFF_BIAS, diff_bias}});
    b.diff_weights->Out(stream_);
    b.diff_bias->Out(stream_);
    if (dx) {
      memory data_diff_dst = diff_dst, weights = p->weights->Bind(w);
      if (b.data_diff_dst) {
        data_diff_dst = b.data_diff_dst->Bind(dy);
        b.data_diff_dst->In(stream_);
      }
      if (b.data_weights) {
        weights = b.data_weights->Bind(w);
        b.data_weights->In(stream_);
      }
      const memory& diff_src = b.diff_src->Bind(dx);
      b.data.execute(stream_, Args{{DNNL_ARG_DIFF_DST, data_diff_dst},
                                   {DNNL_ARG_WEIGHTS, weights},
                                   {DNNL_ARG_DIFF_SRC, diff_src}});
      b.diff_src->Out(stream_);
    }
    stream_.wait();
  }

 private:
  // The primitives for `batch`, made on first use; null if oneDNN has none
  // for this geometry (the caller falls back to im2col).
  Prims* For(int batch) {
    auto it = prims_.find(batch);
    if (it != prims_.end()) return it->second.get();
    std::unique_ptr<Prims> made;
    try {
      made = Make(batch);
    } catch (const dnnl::error&) {
      made = nullptr;
    }
    return prims_.emplace(batch, std::move(made)).first->second.get();
  }

  struct Descs {
    memory::dims src, weights, bias, dst, strides, pad;
    memory::data_type in;  // of x, w and dy; y, dx, dw and db are float32
    memory::desc In(const memory::dims& dims) const { return {dims, in, Tag::any}; }
    memory::desc Out(const memory::dims& dims) const { return Plain(dims, Tag::any); }
  };
  Descs DescsFor(int batch) const {
    return {{batch, g_.channels, g_.height, g_.width},
            {g_.filters, g_.channels, g_.kernel, g_.kernel},
            {g_.filters},
            {batch, g_.filters, g_.out_height(), g_.out_width()},
            {g_.stride, g_.stride},
            {g_.pad, g_.pad},
            in_};
  }

  std::unique_ptr<Prims> Make(int batch) const {
    const Descs d = DescsFor(batch);
    auto p = std::make_unique<Prims>();
    p->fwd_pd = dnnl::convolution_forward::primitive_desc(
        {dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, d.In(d.src), d.In(d.weights),
         d.Out(d.bias), d.Out(d.dst), d.strides, d.pad, d.pad},
        OneDnnEngine());
    p->fwd = dnnl::convolution_forward(p->fwd_pd);
    p->src.emplace(Plain(d.src, Tag::nchw), p->fwd_pd.src_desc(), true);
    p->weights.emplace(Plain(d.weights, Tag::oihw), p->fwd_pd.weights_desc(), true);
    p->bias.emplace(Plain(d.bias, Tag::x), p->fwd_pd.bias_desc(), true);
    p->dst.emplace(Plain(d.dst, Tag::nchw), p->fwd_pd.dst_desc(), false);
    return p;
  }

  std::unique_ptr<BackwardPrims> MakeBackward(int batch, const dnnl::convolution_forward::primitive_desc& fwd,
                                              GradWrite dx_write) const {
    const Descs d = DescsFor(batch);
    const auto alg = dnnl::algorithm::convolution_direct;
    dnnl::convolution_backward_weights::primitive_desc weights(
        {alg, d.In(d.src), d.Out(d.weights), d.Out(d.bias), d.In(d.dst), d.strides, d.pad, d.pad},
        OneDnnEngine(), fwd);
    dnnl::convolution_backward_data::primitive_desc data(
        {alg, d.Out(d.src), d.In(d.weights), d.In(d.dst), d.strides, d.pad, d.pad}, OneDnnEngine(), fwd);
    const memory::desc user_src = Plain(d.src, Tag::nchw), user_weights = Plain(d.weights, Tag::oihw),
                       user_dst = Plain(d.dst, Tag::nchw);
    auto b = std::make_unique<BackwardPrims>();
    b->dx_write = dx_write;
    b->weights = dnnl::convolution_backward_weights(weights);
    b->data = dnnl::convolution_backward_data(data);
    b->diff_dst.emplace(user_dst, weights.diff_dst_desc(), true);
    b->diff_weights.emplace(user_weights, weights.diff_weights_desc(), false);
    b->diff_bias.emplace(Plain(d.bias, Tag::x), weights.diff_bias_desc(), false);
    if (weights.src_desc() != fwd.src_desc()) b->src.emplace(user_src, weights.src_desc(), true);
    if (data.diff_dst_desc() != weights.diff_dst_desc())
      b->data_diff_dst.emplace(user_dst, data.diff_dst_desc(), true);
    if (data.weights_desc() != fwd.weights_desc())
      b->data_weights.emplace(user_weights, data.weights_desc(), true);
    // Setting dx in shoal's layout, the primitive writes it directly (no copy of its own).
    b->diff_src.emplace(user_src, data.diff_src_desc(), false, /*accumulate=*/dx_write == GradWrite::kAdd);
    return b;
  }

  ConvGeometry g_;
  memory::data_type in_;
  dnnl::stream stream_;
  std::map<int, std::unique_ptr<Prims>> prims_;
};

}  // namespace

std::unique_ptr<FastConvolution> NewOneDnnConvolution(const ConvGeometry& g) {
  if (!OneDnnEnabled()) return nullptr;
  return std::make_unique<Convolution>(g);
}

}  // namespace shoal

#else  // no oneDNN in this build

namespace shoal {
std::unique_ptr<FastConvolution> NewOneDnnConvolution(const ConvGeometry&) { return nullptr; }
}  // namespace shoal

#endif
