// GPU memory as a Device: cudaMalloc under the budget, copies and zeroing
// queued on one CUDA stream of its own (so they run beside kernels on the
// default stream), marks as the count of operations queued. Built when CMake
// finds the CUDA toolkit (-DSHOAL_CUDA);
// otherwise OpenCudaDevice says that this build has no CUDA.
#pragma once

#include <memory>

#include "device/device.h"

namespace shoal {

// Whether this build has CUDA, and how many GPUs the machine shows it (0 without either).
bool BuiltWithCuda();
int CudaDeviceCount();
// The memory GPU `ordinal` has free now, and in all (0 where it is not there).
size_t CudaFreeBytes(int ordinal, size_t* total = nullptr);

// GPU `ordinal` with `budget_bytes` of its memory to use.
Status OpenCudaDevice(int ordinal, size_t budget_bytes, std::unique_ptr<Device>* out);

}  // namespace shoal
