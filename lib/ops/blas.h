// The one place that multiplies matrices on the CPU: row-major sgemm, on
// oneDNN's (dnnl_sgemm) where the build has oneDNN and SHOAL_ONEDNN is not 0,
// on OpenBLAS's otherwise; and thread control. oneDNN picks its kernels by
// the instructions the CPU has; OpenBLAS 0.3.21 by its model number, and on
// a model it does not know (a cloud VM's "Intel Xeon Processor") falls back
// to its SSE3 kernels.
#pragma once

#include <string>

#include "core/status.h"

namespace shoal {

// C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C, all row-major.
void Sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, const float* b,
           float beta, float* c);
// The same with explicit leading dimensions (for sub-matrices).
void Sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
           const float* b, int ldb, float beta, float* c, int ldc);

// The compute thread count (worker --threads). With more than one, the ops
// split their work over ParallelFor's threads (ops/parallel.h) and each sgemm
// runs single-threaded: on these shapes a BLAS's own threading scales poorly.
void SetComputeThreads(int threads);
int ComputeThreads();

// train.compute: the precision of the products (Sgemm) and the
// convolutions. kBf16 rounds their inputs to bfloat16 and accumulates in
// float32, on oneDNN's bf16 kernels (ops/onednn.h says where they run); the
// rest of a step (activations, norms, updates) stays float32.
enum class Precision { kFp32, kBf16 };
// Process-wide, as the thread count: set before a net is built, since each
// convolution chooses its kernels when made. Refuses kBf16, leaving the
// precision as it was, where oneDNN has no bf16 kernels here (Bf16Kernels,
// ops/onednn.h), naming the kernels it has.
Status SetComputePrecision(Precision precision);
Precision ComputePrecision();

// Which library computes Sgemm ("onednn" or "openblas"), and the kernels
// OpenBLAS chose for this CPU (its core name), for benchmark records.
const char* SgemmBackend();
std::string OpenBlasCore();

}  // namespace shoal
