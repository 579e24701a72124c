// A text corpus as a char-RNN's dataset (SINGA §4.2.3 trains on the Linux
// kernel's source): its files read in the order given as one sequence of
// bytes, cut into windows of symbol ids that dl-shard deals like images.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "data/shard_writer.h"

namespace shoal {

// The most bytes a corpus may hold (a few hundred MB of source is plenty).
inline constexpr size_t kMaxCorpusBytes = size_t{1} << 30;

// Fills `spec` (dataset "text") from `paths`: the vocabulary is the corpus's
// distinct bytes in increasing order, a symbol's id its place there; window i
// holds the ids of bytes i·(window − 1) .. i·(window − 1) + window − 1, so
// consecutive windows share one symbol and each symbol after the first is
// predicted once (the net reads a window's first window − 1 symbols and
// predicts its last window − 1). The last `test_fraction` of the windows, the
// corpus's tail, is the test set (at least one window each). InvalidArgument
// for no paths, a window or fraction out of range, or too short a text;
// otherwise ReadFile's errors (a corpus over kMaxCorpusBytes among them).
// *spec is unchanged on error.
Status ReadTextCorpus(const std::vector<std::string>& paths, int window, double test_fraction,
                      ShardSpec* spec);

}  // namespace shoal
