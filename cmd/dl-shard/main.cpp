// dl-shard: turns a dataset (lib/data/datasets.h) into a shard directory
// (lib/data/shard.h).
#include <filesystem>

#include "core/exit_codes.h"
#include "core/output.h"
#include "data/datasets.h"
#include "data/shard_writer.h"
#include "data/text_corpus.h"
#include "tool_main.h"

namespace {

int Main(int argc, char** argv) {
  using namespace shoal;
  SetLogName("dl-shard");
  std::string dataset, source, out_dir;
  std::vector<std::string> text;
  int shards = 0, window = 51;
  double test_fraction = 0.05;
  uint64_t seed = 1;
  CLI::App app{"Shuffle a dataset and deal it into N shard files plus test.shard."};
  auto* named = app.add_option("--dataset", dataset, "the dataset")->check(CLI::IsMember(DatasetNames()));
  app.add_option("--text", text,
                 "text files, read in this order as one corpus: windows of --window symbol ids for a "
                 "char-RNN, the vocabulary in the manifest")
      ->excludes(named);  // both ways (CLI11 makes excludes symmetric)
  app.add_option("--window", window,
                 "--text: symbols a record (the net reads all but the last, predicts all but the "
                 "first)")
      ->capture_default_str()
      ->check(CLI::Range(2, 1 << 16));
  app.add_option("--test-fraction", test_fraction, "--text: the corpus's tail kept as the test set")
      ->capture_default_str()
      ->check(CLI::Range(0.0001, 0.9999));
  app.add_option("--source", source,
                 "directory of the dataset's files (default: where its package puts them)");
  app.add_option("--out", out_dir, "output directory, created if missing")->required();
  app.add_option("--shards", shards, "number of train shards (one per worker)")
      ->required()
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--seed", seed, "shuffle seed; same seed, same shards")->capture_default_str();
  bool contiguous = false;
  app.add_flag(
      "--contiguous", contiguous,
      "no shuffle: shard k is the k-th of N contiguous stretches of the train records (a text's windows as "
      "the corpus runs), for a recurrent layer that carries its state from batch to batch (carry_state)");
  SHOAL_PARSE_COMMAND_LINE(app, argc, argv);
  if (dataset.empty() && text.empty()) {
    std::fprintf(stderr, "dl-shard: give --dataset NAME or --text FILE...\n");
    return kExitUsage;
  }

  ShardSpec spec;
  spec.out_dir = out_dir;
  spec.shards = shards;
  spec.seed = seed;
  spec.contiguous = contiguous;
  Status s =
      text.empty() ? ReadDataset(dataset, source, &spec) : ReadTextCorpus(text, window, test_fraction, &spec);
  if (!s.ok()) return ReportFailure(s);
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return ReportFailure(Status::IOError("cannot create '" + out_dir + "': " + ec.message()));
  Manifest manifest;
  s = WriteShards(spec, &manifest);
  if (!s.ok()) return ReportFailure(s);

  nlohmann::json summary = {{"out", out_dir},
                            {"dataset", manifest.dataset},
                            {"shards", manifest.train.size()},
                            {"test_records", manifest.test.records},
                            {"seed", seed}};
  summary["records_per_shard"] = nlohmann::json::array();
  for (const auto& shard : manifest.train) summary["records_per_shard"].push_back(shard.records);
  if (!manifest.vocabulary.empty()) summary["vocabulary_size"] = manifest.vocabulary.size();
  Output out(false);
  out.Record(summary);
  return out.status().ok() ? kExitOk : ReportFailure(out.status());
}

}  // namespace

int main(int argc, char** argv) { return shoal::GuardedMain(Main, argc, argv); }
