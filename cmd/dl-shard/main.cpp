// dl-shard: turns a dataset (lib/data/datasets.h) into a shard directory
// (lib/data/shard.h).
#include "tool_main.h"

#include <filesystem>

#include "core/exit_codes.h"
#include "core/output.h"
#include "data/datasets.h"
#include "data/shard_writer.h"

namespace {

int Main(int argc, char** argv) {
  using namespace shoal;
  SetLogName("dl-shard");
  std::string dataset, source, out_dir;
  int shards = 0;
  uint64_t seed = 1;
  CLI::App app{"Shuffle a dataset and deal it into N shard files plus test.shard."};
  app.add_option("--dataset", dataset, "the dataset")->required()->check(CLI::IsMember(DatasetNames()));
  app.add_option("--source", source, "directory of the dataset's files (default: where its package puts them)");
  app.add_option("--out", out_dir, "output directory, created if missing")->required();
  app.add_option("--shards", shards, "number of train shards (one per worker)")
      ->required()->check(CLI::Range(1, 1 << 20));
  app.add_option("--seed", seed, "shuffle seed; same seed, same shards")->capture_default_str();
  SHOAL_PARSE_COMMAND_LINE(app, argc, argv);

  ShardSpec spec;
  spec.out_dir = out_dir;
  spec.shards = shards;
  spec.seed = seed;
  Status s = ReadDataset(dataset, source, &spec);
  if (!s.ok()) return ReportFailure(s);
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return ReportFailure(Status::IOError("cannot create '" + out_dir + "': " + ec.message()));
  Manifest manifest;
  s = WriteShards(spec, &manifest);
  if (!s.ok()) return ReportFailure(s);

  nlohmann::json summary = {{"out", out_dir}, {"dataset", dataset}, {"shards", manifest.train.size()},
                            {"test_records", manifest.test.records}, {"seed", seed}};
  summary["records_per_shard"] = nlohmann::json::array();
  for (const auto& shard : manifest.train) summary["records_per_shard"].push_back(shard.records);
  Output out(false);
  out.Record(summary);
  return out.status().ok() ? kExitOk : ReportFailure(out.status());
}

}  // namespace

int main(int argc, char** argv) { return shoal::GuardedMain(Main, argc, argv); }
