// How a backward op writes a source's gradient.
#pragma once

#include <cstddef>

namespace shoal {

// kAdd: into what the buffer holds (a source feeding several layers gets the
// sum of their shares, in a buffer cleared before the pass); kSet: over it
// (the op is the source's only writer, so nothing needs clearing first).
enum class GradWrite { kAdd, kSet };

// dx[i] = g(i) or dx[i] += g(i) over [begin, end); setting dx reads it not
// at all. dx aliases nothing g reads, so the loops vectorise.
template <typename G>
void WriteGrad(size_t begin, size_t end, GradWrite write, float* __restrict dx, const G& g) {
  if (write == GradWrite::kAdd)
    for (size_t i = begin; i < end; ++i) dx[i] += g(i);
  else
    for (size_t i = begin; i < end; ++i) dx[i] = g(i);
}

}  // namespace shoal
