#include "ops/blas.h"

#include <cblas.h>

namespace shoal {

void Sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
           const float* b, float beta, float* c) {
  int lda = trans_a ? m : k;
  int ldb = trans_b ? k : n;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, n);
}

void SetComputeThreads(int threads) { openblas_set_num_threads(threads); }

}  // namespace shoal
