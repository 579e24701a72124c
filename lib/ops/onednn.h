// Whether oneDNN computes in this process (convolutions, ops/onednn_convolution.h;
// sgemm, ops/blas.h), and how many threads it takes.
#pragma once

#include <string>

namespace dnnl {
struct engine;
}  // namespace dnnl

namespace shoal {

// True where this build has oneDNN, unless SHOAL_ONEDNN is 0 or off in the
// environment (read once: the tests run both ways, one process each).
bool OneDnnEnabled();

// oneDNN's CPU runtime (Debian's libdnnl) is OpenMP: a primitive or sgemm
// takes the calling thread's OpenMP thread count, set here before each call.
// Does nothing in a build without oneDNN.
void SetOneDnnThreads(int threads);

// The process's one CPU engine, which every primitive and memory of shoal's
// is made on. Only in a build with oneDNN.
dnnl::engine& OneDnnEngine();

// True where oneDNN is enabled and its kernels here use the CPU's bfloat16
// instructions (AVX512_BF16 or AMX): what Precision::kBf16 (ops/blas.h) needs.
bool Bf16Kernels();

// oneDNN's version and the instructions its kernels use here ("2.6.3
// avx512_core_bf16"); "none" in a build without oneDNN, "off" when disabled.
std::string OneDnnDescription();

}  // namespace shoal
