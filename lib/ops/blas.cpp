#include "ops/blas.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>

#if SHOAL_HAVE_ONEDNN
#include <dnnl.h>
#endif

#include "ops/onednn.h"
#include "ops/onednn_matmul.h"

namespace shoal {
namespace {

std::atomic<int> compute_threads{1};
std::atomic<Precision> compute_precision{Precision::kFp32};

}  // namespace

void Sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, const float* b,
           float beta, float* c) {
  Sgemm(trans_a, trans_b, m, n, k, alpha, a, trans_a ? m : k, b, trans_b ? k : n, beta, c, n);
}

void Sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
           const float* b, int ldb, float beta, float* c, int ldc) {
#if SHOAL_HAVE_ONEDNN
  if (OneDnnEnabled()) {
    // One thread: the callers split their work over ParallelFor's threads
    // (the convolutions raise the count to the compute threads on theirs).
    SetOneDnnThreads(1);
    if (compute_precision.load() == Precision::kBf16 &&
        OneDnnMatmulBf16(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
      return;
    if (dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) ==
        dnnl_success)
      return;
  }
#endif
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n,
              k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void SetComputeThreads(int threads) {
  threads = std::max(1, threads);
  compute_threads.store(threads);
  openblas_set_num_threads(1);
}

int ComputeThreads() { return compute_threads.load(); }

Status SetComputePrecision(Precision precision) {
  if (precision == Precision::kBf16 && !Bf16Kernels())
    return Status::InvalidArgument(
        "train.compute bf16 needs oneDNN's bfloat16 kernels (a CPU with AVX512_BF16), but oneDNN here is '" +
        OneDnnDescription() + "': set train.compute: fp32");
  compute_precision.store(precision);
  return Status::Ok();
}

Precision ComputePrecision() { return compute_precision.load(); }

const char* SgemmBackend() { return OneDnnEnabled() ? "onednn" : "openblas"; }

std::string OpenBlasCore() { return openblas_get_corename(); }

}  // namespace shoal
