// Tests for lib/data/image_sources and image_sharder: folders, lists, CIFAR
// batches and numpy arrays read as their formats say, hostile ones refused
// naming the file, and sharding the same whatever the threads.
#include "data/image_sources.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "data/image_sharder.h"
#include "data/shard.h"
#include "test_util.h"

namespace shoal {
namespace {

namespace fs = std::filesystem;

void WriteBytes(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string Jpeg(int width, int height, uint8_t shade) {
  Image image{width, height, 3, std::vector<uint8_t>(static_cast<size_t>(width) * height * 3, shade)};
  for (size_t i = 0; i < image.pixels.size(); i += 7) image.pixels[i] = static_cast<uint8_t>(i);
  std::string bytes;
  REQUIRE(EncodeJpeg(image, 90, &bytes).ok());
  return bytes;
}

// numpy.save's bytes for `descr` of `shape`, the header padded to 64 bytes.
std::string Npy(const std::string& descr, const std::string& shape, const std::string& data) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  header.resize(128 - 10 - 1, ' ');
  header += '\n';
  return std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) + '\0' + header + data;
}

TEST_CASE("an image folder: classes sorted by name, empty ones and other files passed over, counted") {
  TempDir dir;
  WriteBytes(dir.path + "/b/1.jpg", Jpeg(20, 10, 100));
  WriteBytes(dir.path + "/b/2.JPEG", Jpeg(10, 20, 120));
  WriteBytes(dir.path + "/a/x.jpg", Jpeg(12, 12, 10));
  WriteBytes(dir.path + "/a/notes.txt", "not an image");
  fs::create_directories(dir.path + "/c");                       // no images
  fs::create_directory_symlink(dir.path, dir.path + "/a/loop");  // a link to its parent: passed over
  std::unique_ptr<RecordSource> source;
  FolderSkips skips;
  REQUIRE(OpenImageFolder(dir.path, nullptr, &source, &skips).ok());
  CHECK(source->size() == 3);
  CHECK(source->class_names() == std::vector<std::string>{"a", "b"});
  CHECK(skips.empty_classes == 1);
  CHECK(skips.other_files == 2);
  Image image;
  int32_t label = -1;
  REQUIRE(source->Read(0, 0, &image, &label).ok());
  CHECK(label == 0);
  CHECK(image.width == 12);
  REQUIRE(source->Read(2, 1, &image, &label).ok());
  CHECK(label == 1);
  CHECK(image.channels == 1);
  std::string kept;
  CHECK(source->Encoded(1, &kept));
  // A test folder takes the train folder's classes, and refuses one it lacks.
  WriteBytes(dir.path + "-test/b/t.jpg", Jpeg(8, 8, 1));
  std::unique_ptr<RecordSource> test;
  const std::vector<std::string> classes = source->class_names();
  REQUIRE(OpenImageFolder(dir.path + "-test", &classes, &test, &skips).ok());
  REQUIRE(test->Read(0, 0, &image, &label).ok());
  CHECK(label == 1);
  WriteBytes(dir.path + "-test/z/t.jpg", Jpeg(8, 8, 1));
  CHECK(Contains(OpenImageFolder(dir.path + "-test", &classes, &test, &skips).message(),
                 "has class 'z', which the training images lack"));
  fs::remove_all(dir.path + "-test");
  // Nothing but empty classes: a clear error.
  TempDir empty;
  for (int i = 0; i < 50; ++i) fs::create_directories(empty.path + "/class" + std::to_string(i));
  const Status s = OpenImageFolder(empty.path, nullptr, &source, &skips);
  CHECK(s.IsInvalidArgument());
  CHECK(Contains(s.message(), "holds no images"));
}

TEST_CASE("an image list: paths relative to it, labels as given, a bad line named") {
  TempDir dir;
  WriteBytes(dir.path + "/img/p.jpg", Jpeg(9, 9, 50));
  WriteBytes(dir.path + "/list.txt", "img/p.jpg 4\n\nimg/p.jpg   2  \n");
  std::unique_ptr<RecordSource> source;
  REQUIRE(OpenImageList(dir.path + "/list.txt", &source).ok());
  CHECK(source->size() == 2);
  Image image;
  int32_t label;
  REQUIRE(source->Read(1, 0, &image, &label).ok());
  CHECK(label == 2);
  WriteBytes(dir.path + "/bad.txt", "img/p.jpg 1\nimg/p.jpg seven\n");
  CHECK(Contains(OpenImageList(dir.path + "/bad.txt", &source).message(),
                 "bad.txt' line 2: expected 'PATH LABEL'"));
  WriteBytes(dir.path + "/negative.txt", "img/p.jpg -1\n");
  CHECK(!OpenImageList(dir.path + "/negative.txt", &source).ok());
}

TEST_CASE("CIFAR batches: planes to pixels, labels checked, a file of the wrong length named") {
  TempDir dir;
  std::string record(3073, '\0');
  record[0] = 7;
  for (int c = 0; c < 3; ++c)
    for (int p = 0; p < 1024; ++p) record[1 + 1024 * c + p] = static_cast<char>(100 * c + p % 50);
  for (int b = 1; b <= 5; ++b)
    WriteBytes(dir.path + "/data_batch_" + std::to_string(b) + ".bin", record + record);
  WriteBytes(dir.path + "/test_batch.bin", record);
  std::unique_ptr<RecordSource> train, test;
  REQUIRE(OpenCifar(dir.path, false, false, &train, &test).ok());
  CHECK(train->size() == 10);
  CHECK(test->size() == 1);
  Image image;
  int32_t label;
  REQUIRE(train->Read(9, 0, &image, &label).ok());
  CHECK(label == 7);
  CHECK(image.width == 32);
  // Pixel 1's red, green and blue come from the three planes.
  CHECK(image.pixels[3] == 1);
  CHECK(image.pixels[4] == 101);
  CHECK(image.pixels[5] == 201);
  WriteBytes(dir.path + "/data_batch_3.bin", record + "x");
  const Status s = OpenCifar(dir.path, false, false, &train, &test);
  CHECK(s.IsInvalidArgument());
  CHECK(Contains(s.message(),
                 "data_batch_3.bin' is 3074 bytes, not a whole number of 3073-byte CIFAR-10 records"));
  record[0] = 12;  // no such class
  WriteBytes(dir.path + "/data_batch_3.bin", record);
  CHECK(
      Contains(OpenCifar(dir.path, false, false, &train, &test).message(), "label 12 is not one of the 10"));
}

TEST_CASE("numpy arrays: uint8 and float32 images in either layout; a header that lies is refused") {
  TempDir dir;
  std::string pixels;
  for (int i = 0; i < 2 * 3 * 2 * 2; ++i) pixels.push_back(static_cast<char>(i * 10));
  std::string labels;
  for (int64_t l : {1, 0}) labels.append(reinterpret_cast<const char*>(&l), 8);
  WriteBytes(dir.path + "/labels.npy", Npy("<i8", "(2,)", labels));
  WriteBytes(dir.path + "/nhwc.npy", Npy("|u1", "(2, 2, 2, 3)", pixels));
  std::unique_ptr<RecordSource> source;
  const Status opened =
      OpenNpy(dir.path + "/nhwc.npy", dir.path + "/labels.npy", ArrayLayout::kNhwc, &source);
  INFO(opened.ToString());
  REQUIRE(opened.ok());
  Image image;
  int32_t label;
  REQUIRE(source->Read(1, 0, &image, &label).ok());
  CHECK(label == 0);
  CHECK(image.channels == 3);
  CHECK(image.pixels[0] == 120);
  // The same bytes as NCHW: pixel 0's channels are a plane apart.
  WriteBytes(dir.path + "/nchw.npy", Npy("|u1", "(2, 3, 2, 2)", pixels));
  REQUIRE(OpenNpy(dir.path + "/nchw.npy", dir.path + "/labels.npy", ArrayLayout::kNchw, &source).ok());
  REQUIRE(source->Read(0, 0, &image, &label).ok());
  CHECK(image.pixels[0] == 0);
  CHECK(image.pixels[1] == 40);
  CHECK(image.pixels[2] == 80);
  // float32 in [0, 1] is scaled; outside it, refused naming the image.
  std::string floats;
  for (float x : {0.0f, 1.0f, 0.5f, 1.5f}) floats.append(reinterpret_cast<const char*>(&x), 4);
  WriteBytes(dir.path + "/floats.npy", Npy("<f4", "(2, 1, 2)", floats));
  REQUIRE(OpenNpy(dir.path + "/floats.npy", dir.path + "/labels.npy", ArrayLayout::kNhwc, &source).ok());
  REQUIRE(source->Read(0, 0, &image, &label).ok());
  CHECK(image.pixels == std::vector<uint8_t>{0, 255});
  CHECK(Contains(source->Read(1, 0, &image, &label).message(), "is outside [0, 1]"));
  // A shape the file cannot hold, a type not read, labels that do not match.
  WriteBytes(dir.path + "/lying.npy", Npy("|u1", "(1000000, 28, 28)", pixels));
  Status s = OpenNpy(dir.path + "/lying.npy", dir.path + "/labels.npy", ArrayLayout::kNhwc, &source);
  CHECK(s.IsInvalidArgument());
  CHECK(Contains(s.message(), "but the file is"));
  WriteBytes(dir.path + "/complex.npy", Npy("<c8", "(2, 2, 2)", pixels));
  CHECK(Contains(
      OpenNpy(dir.path + "/complex.npy", dir.path + "/labels.npy", ArrayLayout::kNhwc, &source).message(),
      "elements of type '<c8'"));
  WriteBytes(dir.path + "/three.npy", Npy("|u1", "(3, 2, 2)", pixels.substr(0, 12)));
  CHECK(Contains(
      OpenNpy(dir.path + "/three.npy", dir.path + "/labels.npy", ArrayLayout::kNhwc, &source).message(),
      "labels must be 3 integers"));
  NpyHeader header;
  CHECK(!ParseNpyHeader(reinterpret_cast<const uint8_t*>("\x93NUMPY\x09"), 7, &header).ok());
}

// A folder of 3 classes × 8 JPEGs of several sizes.
void Folder(const std::string& dir) {
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 8; ++i)
      WriteBytes(dir + "/c" + std::to_string(c) + "/" + std::to_string(i) + ".jpg",
                 Jpeg(30 + 3 * i, 24 + 2 * c, static_cast<uint8_t>(40 * c + i)));
}

std::string ShardBytes(const std::string& dir) {
  std::string all;
  for (const char* name : {"train-00000.shard", "train-00001.shard", "test.shard", "val.shard"}) {
    std::ifstream in(dir + "/" + name, std::ios::binary);
    all += std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()) + "|";
  }
  return all;
}

TEST_CASE("sharding images gives the same files whatever the threads, and skips a bad one, named") {
  TempDir in;
  Folder(in.path);
  WriteBytes(in.path + "/c1/broken.jpg", Jpeg(30, 30, 1).substr(0, 200));
  std::unique_ptr<RecordSource> source;
  FolderSkips skips;
  REQUIRE(OpenImageFolder(in.path, nullptr, &source, &skips).ok());
  std::string first;
  for (int threads : {1, 3}) {
    TempDir out;
    ImageShardOptions o;
    o.out_dir = out.path;
    o.shards = 2;
    o.threads = threads;
    o.resize = 20;
    o.center_crop = 16;
    o.val_fraction = 0.2;
    Manifest m;
    ShardReport report;
    REQUIRE(ShardImages(*source, nullptr, o, nullptr, &m, &report).ok());
    CHECK_MESSAGE(report.skipped == 1, (report.first_skipped.empty() ? "" : report.first_skipped.back()));
    REQUIRE(report.first_skipped.size() == 1);
    CHECK(Contains(report.first_skipped[0], "broken.jpg"));
    CHECK(m.record_shape == Shape{3, 16, 16});
    CHECK(m.classes == 3);
    CHECK(m.mean.size() == 3);
    CHECK(report.train + report.val + report.test == 24);
    Manifest read;
    REQUIRE(LoadManifest(out.path, &read).ok());
    ShardReader reader;
    REQUIRE(reader.Open(out.path, read.train[0], read).ok());
    std::vector<float> values(3 * 16 * 16);
    int32_t label;
    REQUIRE(reader.Read(0, values.data(), &label).ok());
    if (threads == 1)
      first = ShardBytes(out.path);
    else
      CHECK(ShardBytes(out.path) == first);
  }
  // --strict stops at the bad image, leaving nothing behind.
  TempDir out;
  ImageShardOptions o;
  o.out_dir = out.path;
  o.strict = true;
  o.center_crop = 16;
  Manifest m;
  ShardReport report;
  const Status s = ShardImages(*source, nullptr, o, nullptr, &m, &report);
  CHECK(s.IsCorruption());
  CHECK(Contains(s.message(), "broken.jpg"));
  CHECK(fs::is_empty(out.path));
  // Raw records of different sizes without a crop: refused, saying how to mend it.
  o.strict = false;
  o.center_crop = 0;
  CHECK(Contains(ShardImages(*source, nullptr, o, nullptr, &m, &report).message(),
                 "raw records share one size"));
  // As JPEG they keep their sizes, and read back as encoded records.
  o.store = StoredForm::kJpeg;
  REQUIRE(ShardImages(*source, nullptr, o, nullptr, &m, &report).ok());
  CHECK(m.record_shape == Shape{3, 0, 0});
  ShardReader reader;
  REQUIRE(reader.Open(out.path, m.train[0], m).ok());
  std::vector<uint8_t> bytes;
  int32_t label;
  REQUIRE(reader.ReadRecord(0, &bytes, &label).ok());
  Image image;
  CHECK(DecodeImage(bytes.data(), bytes.size(), 0, &image).ok());
}

}  // namespace
}  // namespace shoal
