// Whether oneDNN computes in this process (convolutions, ops/onednn_convolution.h;
// sgemm, ops/blas.h), and how many threads it takes.
#pragma once

namespace shoal {

// True where this build has oneDNN, unless SHOAL_ONEDNN is 0 or off in the
// environment (read once: the tests run both ways, one process each).
bool OneDnnEnabled();

// oneDNN's CPU runtime (Debian's libdnnl) is OpenMP: a primitive or sgemm
// takes the calling thread's OpenMP thread count, set here before each call.
// Does nothing in a build without oneDNN.
void SetOneDnnThreads(int threads);

}  // namespace shoal
