// Sgemm in bfloat16 (ops/blas.h's Precision::kBf16) on oneDNN's matmul:
// op(A) and op(B) rounded to bfloat16 by oneDNN's reorders, in the caller's
// order, into a buffer each thread keeps for its largest pair; the products
// accumulated and C written in float32. Primitives are made once per shape
// and thread and reused.
#pragma once

namespace shoal {

// C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C, row-major, as Sgemm.
// False where this build or CPU has no bf16 primitive for it (oneDNN off,
// or no AVX512_BF16 kernels): the caller computes in float32 instead.
bool OneDnnMatmulBf16(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                      const float* b, int ldb, float beta, float* c, int ldc);

}  // namespace shoal
