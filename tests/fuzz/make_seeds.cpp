// fuzz_seeds OUT: the fuzzers' seed corpora, one directory per target under
// OUT, each holding valid inputs made by the library's own writers (the code
// the tools run): the shipped job files, plans dl-plan would write, shards and
// manifests from WriteShards, checkpoints a live ParameterServer wrote,
// messages as Encode puts them on the wire. Small on purpose: libFuzzer grows
// inputs from them, and a seed's size bounds how far it grows at first.
#include <png.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <future>
#include <random>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "comm/message.h"
#include "comm/rpc_client.h"
#include "config/job.h"
#include "core/file_util.h"
#include "core/json_text.h"
#include "data/image.h"
#include "data/shard_file.h"
#include "data/shard_writer.h"
#include "plan/plan.h"
#include "plan/planner.h"
#include "ps/server.h"
#include "tiny_job.h"

namespace fs = std::filesystem;
using namespace shoal;

namespace {

void Check(const Status& s, const std::string& what) {
  if (s.ok()) return;
  std::fprintf(stderr, "fuzz_seeds: %s: %s\n", what.c_str(), s.ToString().c_str());
  std::exit(1);
}

class Corpus {
 public:
  Corpus(const fs::path& root, const std::string& target) : dir_(root / target) {
    fs::create_directories(dir_);
  }
  void Add(const std::string& bytes) {
    Check(WriteFileAtomic((dir_ / ("seed-" + std::to_string(n_++))).string(), bytes), "writing a seed");
  }

 private:
  fs::path dir_;
  int n_ = 0;
};

std::string FileBytes(const fs::path& path) {
  std::string text;
  Check(ReadFile(path.string(), &text), "reading " + path.string());
  return text;
}

std::vector<fs::path> ShippedJobs() {
  std::vector<fs::path> jobs;
  for (const char* dir : {"configs", "configs/models"})
    for (const auto& entry : fs::directory_iterator(fs::path(SHOAL_SOURCE_DIR) / dir))
      if (entry.path().extension() == ".yaml") jobs.push_back(entry.path());
  jobs.push_back("tiny");
  return jobs;
}

void JobsAndPlans(const fs::path& out) {
  Corpus jobs(out, "job"), plans(out, "plan");
  for (const fs::path& path : ShippedJobs()) {
    const std::string text = path == "tiny" ? TinyJob(2) : FileBytes(path);
    jobs.Add(text);
    JobConfig job;
    if (!ParseJob(text, path.string(), &job).ok()) continue;  // a model file without a cluster, say
    Plan plan;
    if (MakeDataParallelPlan(job, PlanOptions(), &plan).ok()) plans.Add(JsonText(PlanToJson(plan)));
    PartitionReport report;
    if (BuildPlan(job, PlannerOptions(), PlanOptions(), &report, &plan).ok())
      plans.Add(JsonText(PlanToJson(plan)));
  }
  Corpus overrides(out, "override");
  for (const char* lines :
       {"train.batch_size=32\n", "cluster.nworkers_per_group=4\ncluster.consistency=ssp\n",
        "train.updater=adam\ntrain.learning_rate=0.001\n",
        "model.layers[1].num_filters=8\ndata.dataset=mnist\n", "cluster.wire=fp16\n"})
    overrides.Add(lines);
}

IdxArray Idx(std::vector<int> dims, std::mt19937& rng, int modulo) {
  IdxArray a;
  a.dims = dims;
  size_t n = 1;
  for (int d : dims) n *= d;
  for (size_t i = 0; i < n; ++i) a.bytes.push_back(static_cast<uint8_t>(rng() % modulo));
  return a;
}

// The idx encoding (big-endian dims after the magic), as MNIST is published.
std::string IdxBytes(const IdxArray& a) {
  std::string b = {0, 0, 8, static_cast<char>(a.dims.size())};
  for (int d : a.dims)
    for (int shift : {24, 16, 8, 0}) b.push_back(static_cast<char>((d >> shift) & 0xff));
  return b + std::string(a.bytes.begin(), a.bytes.end());
}

std::string Gzipped(const std::string& bytes, const fs::path& scratch) {
  const std::string path = (scratch / "gz").string();
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
  return FileBytes(path);
}

void ShardsAndIdx(const fs::path& out, const fs::path& scratch) {
  std::mt19937 rng(7);
  ShardSpec spec;
  spec.dataset = "fashion-mnist";
  spec.train_images = Idx({6, 3, 3}, rng, 256);
  spec.train_labels = Idx({6}, rng, 10);
  spec.test_images = Idx({2, 3, 3}, rng, 256);
  spec.test_labels = Idx({2}, rng, 10);
  spec.out_dir = (scratch / "shards").string();
  spec.shards = 2;
  fs::create_directories(spec.out_dir);
  Manifest manifest;
  Check(WriteShards(spec, &manifest), "writing shards");
  Corpus shards(out, "shard"), manifests(out, "manifest"), idx(out, "idx");
  manifests.Add(FileBytes(fs::path(spec.out_dir) / "manifest.json"));
  for (const auto& info : manifest.train) shards.Add(FileBytes(fs::path(spec.out_dir) / info.file));
  shards.Add(FileBytes(fs::path(spec.out_dir) / manifest.test.file));
  for (const IdxArray* a : {&spec.train_images, &spec.train_labels}) {
    idx.Add(IdxBytes(*a));
    idx.Add(Gzipped(IdxBytes(*a), scratch));
  }
  // A text dataset's (dl-shard --text): symbol ids and a vocabulary.
  ShardSpec text;
  text.dataset = "text";
  text.vocabulary = {10, 32, 59, 97, 98};
  text.train_images = Idx({6, 9}, rng, 5);
  text.train_labels = IdxArray{{6}, std::vector<uint8_t>(6, 0)};
  text.test_images = Idx({2, 9}, rng, 5);
  text.test_labels = IdxArray{{2}, std::vector<uint8_t>(2, 0)};
  text.out_dir = (scratch / "text").string();
  fs::create_directories(text.out_dir);
  Check(WriteShards(text, &manifest), "writing text shards");
  manifests.Add(FileBytes(fs::path(text.out_dir) / "manifest.json"));
  shards.Add(FileBytes(fs::path(text.out_dir) / manifest.train[0].file));
}

// Checkpoints as servers write them: the tiny job's two servers, each told an
// evaluation, then shut down (which checkpoints).
void Checkpoints(const fs::path& out, const fs::path& scratch) {
  JobConfig job;
  Check(ParseJob(TinyJob(2), "tiny.yaml", &job), "the tiny job");
  PlanOptions options;
  options.endpoints = {"inproc://seeds-0", "inproc://seeds-1"};
  Plan plan;
  Check(MakeDataParallelPlan(job, options, &plan), "the tiny job's plan");
  Corpus ckpts(out, "checkpoint");
  for (int id = 0; id < 2; ++id) {
    ServerOptions server_options;
    server_options.id = id;
    server_options.checkpoint_dir = (scratch / "ckpt").string();
    ParameterServer server(plan, server_options);
    Check(server.Start(), "starting a server");
    auto run = std::async(std::launch::async, [&] { return server.Run(); });
    RpcClient tool;
    Reply reply;
    Check(tool.Dial(options.endpoints[id], 2000), "dialling a server");
    // A metric comes from a joined worker's own life (lib/ps/server.cpp): worker 0 joins first.
    Check(tool.Call({MsgType::kJoin, plan.hash_value(), kJoinWhereTheServerIs, 0, 1}, {}, &reply), "a join");
    const MsgHeader metric{MsgType::kMetric, plan.hash_value(), 0, 0, 1};
    Check(tool.Send(metric, {}, R"({"step": 0, "test_accuracy": 0.5, "test_loss": 1.25})"),
          "sending a metric");
    Check(tool.Receive(&reply), "a metric's reply");
    Check(tool.Call({MsgType::kShutdown, plan.hash_value(), 0, kToolSender}, {}, &reply), "a shutdown");
    Check(run.get(), "the server's run");
  }
  for (const std::string& path : LatestCheckpoints((scratch / "ckpt").string())) {
    const std::string file = FileBytes(path);
    ckpts.Add(file);
    // checkpoint_fuzzer's second form: the header's JSON, a zero, the tensors' bytes.
    uint64_t header_bytes = 0;
    std::memcpy(&header_bytes, file.data() + 12, 8);
    ckpts.Add(file.substr(20, header_bytes) + std::string(1, '\0') + file.substr(20 + header_bytes + 4));
  }
}

std::string Encoded(const MsgHeader& h, const std::vector<EntryRef>& entries, const std::string& text = "") {
  std::string bytes(EncodedSize(entries, text), '\0');
  Encode(h, entries, text, reinterpret_cast<unsigned char*>(bytes.data()));
  return bytes;
}

void Messages(const fs::path& out) {
  Corpus messages(out, "message"), requests(out, "server");
  const std::vector<float> w(12, 0.25f), b(3, -1.0f);
  const uint64_t hash = 0x1234abcd5678ef00ull;
  messages.Add(Encoded({MsgType::kGet, hash, 3, 0, 100}, {}));
  messages.Add(Encoded({MsgType::kUpdate, hash, 3, 1, 101}, {{0, w.data(), 12}, {1, b.data(), 3}}));
  messages.Add(Encoded({MsgType::kUpdateGet, hash, 3, 1, 101}, {{0, w.data(), 12, ValueEncoding::kF16}}));
  messages.Add(Encoded({MsgType::kStats, hash, 0, kToolSender, 0}, {}, R"({"version": 3})"));
  messages.Add(Encoded({MsgType::kError, hash, 0, 0, 0}, {}, "worker 3 is not in this plan"));
  messages.Add(Encoded({MsgType::kStopping, hash, 7, 0, 0}, {}, "server 0 is stopping (shut down)"));
  // server_fuzzer reads its input with FuzzedDataProvider, which no writer of
  // ours speaks: random bytes of a few lengths start it.
  std::mt19937 rng(11);
  for (size_t length : {16, 64, 256, 1024}) {
    std::string bytes;
    for (size_t i = 0; i < length; ++i) bytes.push_back(static_cast<char>(rng()));
    requests.Add(bytes);
  }
}

}  // namespace

// Images and image datasets: a JPEG (colour and gray) and a PNG from the
// library's encoders, numpy arrays, CIFAR records, a list file, and a shard
// of encoded records.
void Images(const fs::path& out, const fs::path& scratch) {
  Corpus images(out, "image"), npy(out, "npy"), cifar(out, "cifar"), lists(out, "image_list"),
      shards(out, "shard");
  std::mt19937 rng(11);
  Image colour{8, 6, 3, {}}, gray{5, 5, 1, {}};
  for (Image* image : {&colour, &gray})
    for (size_t i = 0; i < image->bytes(); ++i) image->pixels.push_back(static_cast<uint8_t>(rng()));
  std::string jpeg, gray_jpeg;
  Check(EncodeJpeg(colour, 80, &jpeg), "encoding a JPEG");
  Check(EncodeJpeg(gray, 80, &gray_jpeg), "encoding a gray JPEG");
  images.Add(jpeg);
  images.Add(gray_jpeg);
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = 8;
  png.height = 6;
  png.format = PNG_FORMAT_RGB;
  png_alloc_size_t png_size = 0;
  png_image_write_to_memory(&png, nullptr, &png_size, 0, colour.pixels.data(), 0, nullptr);
  std::string png_bytes(png_size, '\0');
  Check(png_image_write_to_memory(&png, png_bytes.data(), &png_size, 0, colour.pixels.data(), 0, nullptr)
            ? Status::Ok()
            : Status::IOError("libpng"),
        "encoding a PNG");
  images.Add(png_bytes.substr(0, png_size));
  // Four 2 × 2 RGB images, as numpy.save writes them (the header padded to 64 bytes).
  auto npy_file = [](const std::string& descr, const std::string& shape, const std::string& data) {
    std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
    header.resize(128 - 10 - 1, ' ');
    header += '\n';
    return std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) + '\0' + header + data;
  };
  std::string pixels(4 * 2 * 2 * 3, '\0');
  for (char& c : pixels) c = static_cast<char>(rng());
  npy.Add(npy_file("|u1", "(4, 2, 2, 3)", pixels));
  std::string floats(4 * 2 * 2 * 4, '\0');
  for (size_t i = 0; i < floats.size(); i += 4) {
    const float x = static_cast<float>(rng() % 256) / 255.0f;
    std::memcpy(&floats[i], &x, 4);
  }
  npy.Add(npy_file("<f4", "(4, 2, 2)", floats));
  // CIFAR: a CIFAR-10 record (label 3), then two CIFAR-100 records.
  std::string record(3073, '\0');
  for (char& c : record) c = static_cast<char>(rng());
  record[0] = 3;
  cifar.Add(record);
  std::string records(2 * 3074, '\0');
  for (size_t i = 0; i < records.size(); ++i) records[i] = static_cast<char>(rng());
  records[0] = 4, records[1] = 21, records[3074] = 0, records[3075] = 99;
  cifar.Add(records);
  lists.Add("a.jpg 0\nb/c.png 1\n\n/abs/d.jpeg 7\n");
  lists.Add("list.txt 0\n");
  ShardFileWriter writer;
  const std::string shard = (scratch / "encoded.shard").string();
  Check(writer.Open(shard, {3, 0, 0}, StoredForm::kJpeg), "starting an encoded shard");
  Check(writer.Append(reinterpret_cast<const uint8_t*>(jpeg.data()), jpeg.size(), 1), "an encoded record");
  Check(writer.Append(reinterpret_cast<const uint8_t*>(png_bytes.data()), png_size, 0), "an encoded record");
  ShardInfo info;
  Check(writer.Finish(&info), "finishing an encoded shard");
  shards.Add(FileBytes(shard));
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const fs::path out = argv[1];
  const fs::path scratch = out / ".scratch";
  fs::remove_all(scratch);
  fs::create_directories(scratch);
  JobsAndPlans(out);
  ShardsAndIdx(out, scratch);
  Checkpoints(out, scratch);
  Messages(out);
  Images(out, scratch);
  fs::remove_all(scratch);
  return 0;
}
