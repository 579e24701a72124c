#include "train/sample.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "train/evaluate.h"

namespace shoal {

Status SampleText(const Plan& plan, const SampleOptions& options, std::string* text) {
  if (options.symbols < 0) return Status::InvalidArgument("the number of symbols to draw is negative");
  if (!(options.temperature > 0.0 && options.temperature <= 100.0))
    return Status::InvalidArgument("the temperature must be in (0, 100]");
  if (options.prime.empty()) return Status::InvalidArgument("the prime text is empty");
  CheckpointNet c;
  SHOAL_RETURN_IF_ERROR(
      OpenCheckpointNet(plan, options.checkpoint, -1, options.shard_dir, options.threads, &c));
  const std::string& dir = c.shard_dir;
  const std::vector<int>& vocabulary = c.manifest.vocabulary;
  if (vocabulary.empty())
    return Status::InvalidArgument("'" + dir +
                                   "/manifest.json' has no vocabulary: not a text dataset (dl-shard --text)");
  std::vector<int> id(256, -1);
  for (size_t i = 0; i < vocabulary.size(); ++i) id[vocabulary[i]] = static_cast<int>(i);
  Net* net = c.net.get();
  const LossLayer& loss = net->loss_layer();
  const int steps = loss.predictions_per_record();
  const int classes = loss.classes();
  if (steps < 1 || loss.out_shape().size() != 2 ||
      net->data_layer().feature_size() != static_cast<size_t>(steps) + 1)
    return Status::InvalidArgument(
        "the plan's net is not a char-RNN's: its loss must be over a sequence of steps "
        "(softmax_loss over [steps, vocabulary]) and its data layer hold steps + 1 symbols");

  std::vector<int> symbols;
  for (size_t i = 0; i < options.prime.size(); ++i) {
    const int s = id[static_cast<unsigned char>(options.prime[i])];
    if (s < 0)
      return Status::InvalidArgument("the prime's byte " + std::to_string(i) + " (" +
                                     std::to_string(static_cast<unsigned char>(options.prime[i])) +
                                     ") is not in the vocabulary of '" + dir + "/manifest.json'");
    symbols.push_back(s);
  }
  net->Allocate(1);
  std::mt19937_64 rng(options.seed);
  std::vector<double> weights(classes);
  *text = options.prime;
  // A net without carried state reads the last `steps` symbols from a zero
  // state. One that carries it reads the text in windows of `steps`, each
  // from the state the one before left: the symbols since the last full
  // window are read from `start` (the state after it), and a full window's
  // state becomes the next `start`, so every symbol is read once in order,
  // as in training.
  const std::vector<CarriedState> states = net->CarriedStates();
  const bool carries = !states.empty();
  std::vector<std::vector<float>> start(states.size());
  size_t from = 0;  // where the window begins in `symbols`
  auto forward = [&](size_t read) {
    for (size_t i = 0; i < states.size(); ++i) *states[i].floats = start[i];
    float* window = net->data_layer().data().data();
    // The positions after the window's symbols are zeros, which the steps before them do not read.
    std::fill(window, window + steps + 1, 0.0f);
    for (size_t t = 0; t < read; ++t) window[t] = static_cast<float>(symbols[from + t]);
    net->Forward(Phase::kTest);
    if (read == static_cast<size_t>(steps)) {  // a full window: its state is where the next one starts
      for (size_t i = 0; i < states.size(); ++i) start[i] = *states[i].floats;
      from += read;
    }
  };
  if (carries)
    while (symbols.size() - from > static_cast<size_t>(steps)) forward(steps);  // the prime's full windows
  for (int n = 0; n < options.symbols; ++n) {
    if (!carries) from = symbols.size() - std::min<size_t>(steps, symbols.size());
    const size_t read = symbols.size() - from;
    forward(read);
    const float* p = loss.data().data() + (read - 1) * classes;
    for (int c = 0; c < classes; ++c)
      weights[c] = std::pow(std::max(p[c], 1e-30f), 1.0 / options.temperature);
    const int next = std::discrete_distribution<int>(weights.begin(), weights.end())(rng);
    if (next >= static_cast<int>(vocabulary.size()))
      return Status::InvalidArgument("the net drew class " + std::to_string(next) +
                                     ", past the vocabulary's " + std::to_string(vocabulary.size()) +
                                     " symbols");
    symbols.push_back(next);
    text->push_back(static_cast<char>(vocabulary[next]));
  }
  return Status::Ok();
}

}  // namespace shoal
