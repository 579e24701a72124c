// Text from a trained char-RNN (SINGA §4.2.3): a checkpoint's parameters in
// the plan's net, a prime string, and each next symbol drawn from the net's
// distribution over the vocabulary (the shards' manifest's) at a temperature.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "plan/plan.h"

namespace shoal {

struct SampleOptions {
  std::vector<std::string> checkpoint;  // a merged file, one step's server files, or a directory
  std::string shard_dir;                // the vocabulary's manifest; default the job's data.shards
  std::string prime = "\n";             // the text the net reads first (every byte in the vocabulary)
  int symbols = 200;                    // how many to draw
  double temperature = 1.0;             // below 1 sharper, above 1 flatter
  uint64_t seed = 1;
  int threads = 1;
};

// The prime followed by `symbols` drawn ones. The net must be a char-RNN's:
// a data layer of steps + 1 symbols and a loss over a sequence of steps
// (softmax_loss over [steps, vocabulary]), each step depending on the symbols
// up to it only (embedding, gru and per-step layers). The distribution after
// the last symbol is drawn from: a net without carried state reads the last
// `steps` symbols; one that carries it (gru carry_state) reads the whole text
// in order, window after window, each from the state the one before left.
// InvalidArgument for options out of range, a manifest without a vocabulary,
// a net not a char-RNN's, a prime byte outside the vocabulary, or a class
// drawn past it (*text then holds the text so far). Otherwise
// OpenCheckpointNet's errors, with *text untouched.
Status SampleText(const Plan& plan, const SampleOptions& options, std::string* text);

}  // namespace shoal
