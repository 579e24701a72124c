// The logistic function and tanh over a dense run of floats on oneDNN's
// eltwise primitive, whose kernels use this CPU's vector instructions (the
// build's own loops call libm's scalar expf). A primitive is made per
// function and length on each thread and kept for the next call, up to a
// bound.
#pragma once

#include <cstddef>

namespace shoal {

enum class Squash { kLogistic, kTanh };

// y[i] = f(x[i]) for i < n, on the calling thread alone; y may be x. False
// where this build has no oneDNN, it is off (SHOAL_ONEDNN=0), the run is
// too short to pay for a call, or oneDNN has no primitive for it: the caller
// computes f itself.
bool OneDnnSquash(Squash f, size_t n, const float* x, float* y);

}  // namespace shoal
