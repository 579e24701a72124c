// How a backward op writes a source's gradient.
#pragma once

namespace shoal {

// kAdd: into what the buffer holds (a source feeding several layers gets the
// sum of their shares, in a buffer cleared before the pass); kSet: over it
// (the op is the source's only writer, so nothing needs clearing first).
enum class GradWrite { kAdd, kSet };

}  // namespace shoal
