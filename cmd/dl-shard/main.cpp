// dl-shard: turns a dataset into a shard directory (lib/data/shard.h): a
// dataset package's idx files (lib/data/datasets.h), text, or images the
// user brings (a folder of class folders, a list of files, CIFAR batches,
// numpy arrays: lib/data/image_sources.h).
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "core/exit_codes.h"
#include "core/output.h"
#include "data/datasets.h"
#include "data/image_sharder.h"
#include "data/shard_writer.h"
#include "data/text_corpus.h"
#include "tool_main.h"

namespace {

using namespace shoal;

// Everything the command line sets.
struct Flags {
  std::string dataset, source, out_dir, images, test_dir, cifar, npz, layout = "nhwc", store = "raw";
  std::vector<std::string> text, npy, npz_keys{"images", "labels"};
  int shards = 0, window = 51;
  double test_fraction = -1, val_fraction = 0;
  uint64_t seed = 1, limit = 0;
  bool contiguous = false, cifar100 = false, coarse = false, strict = false;
  ImageShardOptions image;
};

void AddOptions(CLI::App& app, Flags* f) {
  auto* named = app.add_option("--dataset", f->dataset, "a dataset package's idx files")
                    ->check(CLI::IsMember(DatasetNames()));
  auto* text =
      app.add_option("--text", f->text,
                     "text files, read in this order as one corpus: windows of --window symbol ids for a "
                     "char-RNN, the vocabulary in the manifest");
  auto* images =
      app.add_option("--images", f->images,
                     "images: a folder of class folders (DIR/<class>/*.jpg|jpeg|png, classes sorted by "
                     "name) or a list file of 'PATH LABEL' lines");
  auto* cifar =
      app.add_option("--cifar", f->cifar, "CIFAR-10 binary batches in DIR (--cifar100: CIFAR-100's)");
  auto* npy =
      app.add_option("--npy", f->npy, "IMAGES.npy LABELS.npy: uint8 or float32 [0, 1] images, integer labels")
          ->expected(2);
  auto* npz = app.add_option("--npz", f->npz, "an .npz holding the images and labels (--npz-keys)");
  for (CLI::Option* a : {named, text, images, cifar, npy, npz})
    for (CLI::Option* b : {named, text, images, cifar, npy, npz})
      if (a != b) a->excludes(b);
  app.add_option("--npz-keys", f->npz_keys, "the .npz arrays' names: IMAGES LABELS")
      ->expected(2)
      ->capture_default_str();
  app.add_option("--layout", f->layout, "numpy images' layout")
      ->check(CLI::IsMember({"nhwc", "nchw"}))
      ->capture_default_str();
  app.add_flag("--cifar100", f->cifar100, "--cifar: CIFAR-100's train.bin and test.bin");
  app.add_flag("--coarse", f->coarse, "--cifar100: its 20 coarse labels (default: its 100 fine ones)");
  app.add_option(
      "--test-dir,--val", f->test_dir,
      "--images: the test set's folder (ImageNet's val folder; its classes the train folder's) or list");
  app.add_option("--window", f->window,
                 "--text: symbols a record (the net reads all but the last, predicts all but "
                 "the first)")
      ->capture_default_str()
      ->check(CLI::Range(2, 1 << 16));
  app.add_option(
         "--test-fraction", f->test_fraction,
         "the share of the records kept as the test set (--text: the corpus's tail, default 0.05; images "
         "without --test-dir, numpy arrays: the shuffled order's last, default 0.1)")
      ->check(CLI::Range(0.0001, 0.9999));
  app.add_option("--val-fraction", f->val_fraction,
                 "the share of the training records held out as a validation set (val.shard)")
      ->check(CLI::Range(0.0, 0.9999));
  app.add_option("--source", f->source,
                 "directory of the dataset's files (default: where its package puts them)");
  app.add_option("--out", f->out_dir, "output directory, created if missing")->required();
  app.add_option("--shards", f->shards, "number of train shards (one per worker)")
      ->required()
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--seed", f->seed, "shuffle seed; same seed, same shards")->capture_default_str();
  app.add_option("--limit", f->limit, "only the first N records of the training and the test data (0: all)");
  app.add_flag(
      "--contiguous", f->contiguous,
      "no shuffle: shard k is the k-th of N contiguous stretches of the train records (a text's windows as "
      "the corpus runs), for a recurrent layer that carries its state from batch to batch (carry_state)");
  app.add_option("--resize", f->image.resize, "images: the shorter side scaled to S (antialiased)");
  app.add_option("--center-crop", f->image.center_crop, "images: the central S × S kept");
  app.add_option("--store", f->store, "images: raw uint8 pixels, or each image as a JPEG (--quality)")
      ->check(CLI::IsMember({"raw", "jpeg"}))
      ->capture_default_str();
  app.add_option("--quality", f->image.quality, "--store jpeg: the JPEG quality")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--channels", f->image.channels, "images: 1 (gray) or 3 (RGB); default: the first image's")
      ->check(CLI::IsMember({1, 3}));
  app.add_option("--threads", f->image.threads, "images: decoding threads")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_flag("--strict", f->strict,
               "images: stop at an image that cannot be read (default: skip it, counted)");
}

// The summary every reader ends with.
nlohmann::json Summary(const Flags& f, const Manifest& m) {
  nlohmann::json summary = {{"out", f.out_dir},
                            {"dataset", m.dataset},
                            {"shards", m.train.size()},
                            {"test_records", m.test.records},
                            {"seed", f.seed}};
  summary["records_per_shard"] = nlohmann::json::array();
  for (const auto& shard : m.train) summary["records_per_shard"].push_back(shard.records);
  if (m.val) summary["val_records"] = m.val->records;
  if (!m.vocabulary.empty()) summary["vocabulary_size"] = m.vocabulary.size();
  return summary;
}

// --dataset and --text: arrays held whole.
int ShardArrays(const Flags& f) {
  ShardSpec spec;
  spec.out_dir = f.out_dir;
  spec.shards = f.shards;
  spec.seed = f.seed;
  spec.contiguous = f.contiguous;
  spec.val_fraction = f.val_fraction;
  Status s = f.text.empty()
                 ? ReadDataset(f.dataset, f.source, &spec)
                 : ReadTextCorpus(f.text, f.window, f.test_fraction > 0 ? f.test_fraction : 0.05, &spec);
  if (!s.ok()) return ReportFailure(s);
  if (f.limit > 0) {
    LimitRecords(&spec.train_images, &spec.train_labels, f.limit);
    LimitRecords(&spec.test_images, &spec.test_labels, f.limit);
  }
  std::error_code ec;
  std::filesystem::create_directories(f.out_dir, ec);
  if (ec) return ReportFailure(Status::IOError("cannot create '" + f.out_dir + "': " + ec.message()));
  Manifest manifest;
  s = WriteShards(spec, &manifest);
  if (!s.ok()) return ReportFailure(s);
  Output out(false);
  out.Record(Summary(f, manifest));
  return out.status().ok() ? kExitOk : ReportFailure(out.status());
}

// The image sources the flags name: train, and test where it is apart.
Status OpenSources(const Flags& f, std::unique_ptr<RecordSource>* train, std::unique_ptr<RecordSource>* test,
                   FolderSkips* skips) {
  const ArrayLayout layout = f.layout == "nchw" ? ArrayLayout::kNchw : ArrayLayout::kNhwc;
  if (!f.cifar.empty()) return OpenCifar(f.cifar, f.cifar100, f.coarse, train, test);
  if (!f.npy.empty()) return OpenNpy(f.npy[0], f.npy[1], layout, train);
  if (!f.npz.empty()) return OpenNpz(f.npz, f.npz_keys[0], f.npz_keys[1], layout, f.out_dir, train);
  std::error_code ec;
  if (std::filesystem::is_directory(f.images, ec))
    SHOAL_RETURN_IF_ERROR(OpenImageFolder(f.images, nullptr, train, skips));
  else
    SHOAL_RETURN_IF_ERROR(OpenImageList(f.images, train));
  if (f.test_dir.empty()) return Status::Ok();
  if (std::filesystem::is_directory(f.test_dir, ec))
    return OpenImageFolder(f.test_dir, &(*train)->class_names(), test, skips);
  return OpenImageList(f.test_dir, test);
}

// "12.3k records/s, 40 s left" for a person.
std::string ProgressLine(const ShardProgress& p) {
  const double rate = p.seconds > 0 ? p.done / p.seconds : 0;
  const double left = rate > 0 ? (p.total - p.done) / rate : 0;
  char line[160];
  std::snprintf(line, sizeof line, "%llu of %llu records (%.0f%%), %.0f records/s, %.0f s left%s",
                static_cast<unsigned long long>(p.done), static_cast<unsigned long long>(p.total),
                100.0 * p.done / std::max<uint64_t>(p.total, 1), rate, left,
                p.skipped ? (", " + std::to_string(p.skipped) + " skipped").c_str() : "");
  return line;
}

// --images, --cifar, --npy, --npz: streamed, on --threads threads.
int ShardImageSources(Flags& f) {
  std::error_code ec;
  std::filesystem::create_directories(f.out_dir, ec);
  if (ec) return ReportFailure(Status::IOError("cannot create '" + f.out_dir + "': " + ec.message()));
  std::unique_ptr<RecordSource> train, test;
  FolderSkips skips;
  Status s = OpenSources(f, &train, &test, &skips);
  if (!s.ok()) return ReportFailure(s);
  if (f.limit > 0) {
    train = LimitRecords(std::move(train), f.limit);
    if (test) test = LimitRecords(std::move(test), f.limit);
  }
  ImageShardOptions& o = f.image;
  o.out_dir = f.out_dir;
  o.shards = f.shards;
  o.seed = f.seed;
  o.store = f.store == "jpeg" ? StoredForm::kJpeg : StoredForm::kRaw;
  o.test_fraction = test ? 0.0 : f.test_fraction > 0 ? f.test_fraction : 0.1;
  o.val_fraction = f.val_fraction;
  o.strict = f.strict;
  o.dataset = !f.cifar.empty()   ? (f.cifar100 ? "cifar-100" : "cifar-10")
              : f.images.empty() ? "arrays"
                                 : "images";
  Output progress(StdoutIsTerminal(), StdoutIsTerminal() ? stderr : stdout);
  Manifest manifest;
  ShardReport report;
  s = ShardImages(
      *train, test.get(), o,
      [&](const ShardProgress& p) {
        progress.Live({{"event", "progress"},
                       {"done", p.done},
                       {"total", p.total},
                       {"skipped", p.skipped},
                       {"seconds", p.seconds}},
                      ProgressLine(p));
      },
      &manifest, &report);
  if (!s.ok()) return ReportFailure(s);
  nlohmann::json summary = Summary(f, manifest);
  summary.update(
      {{"classes", manifest.classes},
       {"record_shape", manifest.record_shape},
       {"stored", f.store},
       {"bytes", report.bytes},
       {"seconds", report.seconds},
       {"records_per_s", (report.train + report.val + report.test) / std::max(report.seconds, 1e-9)},
       {"skipped", report.skipped},
       {"first_skipped", report.first_skipped},
       {"passed_over",
        {{"empty_classes", skips.empty_classes},
         {"other_files", skips.other_files},
         {"first", skips.first}}}});
  Output out(false);
  out.Record(summary);
  return out.status().ok() ? kExitOk : ReportFailure(out.status());
}

int Main(int argc, char** argv) {
  SetLogName("dl-shard");
  CLI::App app{"Shuffle a dataset and deal it into N shard files plus test.shard."};
  Flags f;
  AddOptions(app, &f);
  SHOAL_PARSE_COMMAND_LINE(app, argc, argv);
  if (!f.dataset.empty() || !f.text.empty()) return ShardArrays(f);
  if (!f.images.empty() || !f.cifar.empty() || !f.npy.empty() || !f.npz.empty()) return ShardImageSources(f);
  Log("give --dataset NAME, --text FILE..., --images DIR|LIST, --cifar DIR, --npy IMAGES LABELS or --npz "
      "FILE");
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) { return shoal::GuardedMain(Main, argc, argv); }
