// The one place that talks to OpenBLAS: row-major sgemm and thread control.
#pragma once

namespace shoal {

// C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C, all row-major.
void Sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
           const float* b, float beta, float* c);

void SetComputeThreads(int threads);

}  // namespace shoal
