// Marks a function that compiles for a GPU too (lib/ops/cuda_kernels.cu),
// so that the host and the GPU compute it from one definition.
#pragma once

#ifdef __CUDACC__
#define SHOAL_HOST_DEVICE __host__ __device__
#else
#define SHOAL_HOST_DEVICE
#endif
