#include "ops/onednn_eltwise.h"

#if SHOAL_HAVE_ONEDNN
#include <dnnl.hpp>
#include <map>
#include <memory>
#include <utility>

#include "ops/onednn.h"

namespace shoal {
namespace {

struct Eltwise {
  dnnl::memory src, dst;
  dnnl::eltwise_forward squash;
};

std::unique_ptr<Eltwise> Make(Squash f, size_t n) {
  const dnnl::memory::desc run({static_cast<dnnl::memory::dim>(n)}, dnnl::memory::data_type::f32,
                               dnnl::memory::format_tag::a);
  const auto algorithm =
      f == Squash::kLogistic ? dnnl::algorithm::eltwise_logistic : dnnl::algorithm::eltwise_tanh;
  const dnnl::eltwise_forward::primitive_desc pd(
      dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, algorithm, run), OneDnnEngine());
  auto made = std::make_unique<Eltwise>();
  made->src = dnnl::memory(run, OneDnnEngine(), DNNL_MEMORY_NONE);
  made->dst = dnnl::memory(run, OneDnnEngine(), DNNL_MEMORY_NONE);
  made->squash = dnnl::eltwise_forward(pd);
  return made;
}

}  // namespace

bool OneDnnSquash(Squash f, size_t n, const float* x, float* y) {
  // A call costs about what a scalar loop over a few dozen floats does.
  constexpr size_t kShortest = 64;
  if (!OneDnnEnabled() || n < kShortest) return false;
  // Callers run it on many threads at once (ParallelFor's): each keeps its own.
  thread_local std::map<std::pair<Squash, size_t>, std::unique_ptr<Eltwise>> made;
  thread_local dnnl::stream stream(OneDnnEngine());
  // The lengths a thread meets are few (a layer's rows, split over threads); a
  // thread that meets many starts over rather than keep them all.
  constexpr size_t kKept = 64;
  auto it = made.find({f, n});
  if (it == made.end()) {
    if (made.size() >= kKept) made.clear();
    std::unique_ptr<Eltwise> eltwise;
    try {
      eltwise = Make(f, n);
    } catch (const dnnl::error&) {
      eltwise = nullptr;  // no primitive for this run: the caller's loop computes it
    }
    it = made.emplace(std::make_pair(f, n), std::move(eltwise)).first;
  }
  Eltwise* p = it->second.get();
  if (!p) return false;
  SetOneDnnThreads(1);  // this thread alone: the caller splits the work
  p->src.set_data_handle(const_cast<float*>(x));
  p->dst.set_data_handle(y);
  p->squash.execute(stream, {{DNNL_ARG_SRC, p->src}, {DNNL_ARG_DST, p->dst}});
  stream.wait();
  return true;
}

}  // namespace shoal

#else  // no oneDNN in this build

namespace shoal {
bool OneDnnSquash(Squash, size_t, const float*, float*) { return false; }
}  // namespace shoal

#endif
