// The image data dl-shard reads from outside: a folder of class folders
// (ImageNet's layout) or a list of files, CIFAR-10 and CIFAR-100 binary
// batches, numpy arrays (.npy pairs, .npz). Each is a RecordSource: its
// records read by index, from any thread, every byte checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/image.h"

namespace shoal {

// Labelled images that dl-shard reads by index, from any thread.
class RecordSource {
 public:
  virtual ~RecordSource() = default;
  virtual uint64_t size() const = 0;
  // Record i's image (with `channels` channels; 0: as stored) and label.
  // Corruption or InvalidArgument for a record that cannot be read (dl-shard
  // skips it, or stops with --strict), IOError for a file that cannot be read.
  virtual Status Read(uint64_t i, int channels, Image* image, int32_t* label) const = 0;
  // Record i's encoded bytes where it is a JPEG file that can be kept as it
  // is; false otherwise.
  virtual bool Encoded(uint64_t i, std::string* bytes) const { return false; }
  // What names record i in messages: a file's path, "'data_batch_1.bin' record 7".
  virtual std::string Name(uint64_t i) const = 0;
  // The classes' names (label i's at i), or none.
  virtual const std::vector<std::string>& class_names() const = 0;
};

// How many of what was passed over (a folder's other files, records that do
// not read) dl-shard's summary names.
inline constexpr size_t kNamedSkips = 5;

// What a folder listing passed over, for dl-shard's summary.
struct FolderSkips {
  uint64_t empty_classes = 0;      // class folders without an image
  uint64_t other_files = 0;        // files that are not .jpg, .jpeg or .png, and what is not a file
  std::vector<std::string> first;  // the first few of them, named
};

// The images of `dir`/<class>/*.{jpg,jpeg,png} (any case), classes sorted by
// name, each class's files by name; class folders without images are passed
// over (counted in `skips`). `classes` given: the folders must be among them
// (a test folder read with the train folder's classes). InvalidArgument for a
// folder without images, IOError for one that cannot be listed. Also
// InvalidArgument for a class that `classes` lacks; *out is set only on success.
Status OpenImageFolder(const std::string& dir, const std::vector<std::string>* classes,
                       std::unique_ptr<RecordSource>* out, FolderSkips* skips);

// The images a list file names, a line each: "PATH LABEL" (the path relative
// to the list's folder, the label a class number). InvalidArgument naming
// the line for one that is not of that form, or for a list naming no image.
// Returns ReadFile's errors; the images are not opened here. *out is set
// only on success.
Status OpenImageList(const std::string& list, std::unique_ptr<RecordSource>* out);

// CIFAR binary batches in `dir`: CIFAR-10's data_batch_1..5.bin (train) and
// test_batch.bin, or CIFAR-100's train.bin and test.bin (`hundred`; its fine
// labels, or its coarse ones). Class names from batches.meta.txt (or
// fine/coarse_label_names.txt) where present. InvalidArgument for a file
// that is not a whole number of records, naming its length, or that holds
// a label out of range. A batch that does not open or read is IOError (or
// InvalidArgument for what is not a file). *train may be set when the test
// batch fails.
Status OpenCifar(const std::string& dir, bool hundred, bool coarse, std::unique_ptr<RecordSource>* train,
                 std::unique_ptr<RecordSource>* test);

// The first `limit` records of `source`.
std::unique_ptr<RecordSource> LimitRecords(std::unique_ptr<RecordSource> source, uint64_t limit);

// How a numpy array of images lays out its pixels.
enum class ArrayLayout { kNhwc, kNchw };

// Images and labels from numpy arrays: `images` of uint8 (or float32 in [0,
// 1]) shaped [N, H, W, C], [N, C, H, W] or [N, H, W], and `labels` of N
// integers. An .npz holds them under `images_key` and `labels_key`; a
// compressed one is first inflated into `scratch_dir`. InvalidArgument for a
// header that lies (a shape the file cannot hold, a type not read), naming
// the file, or for a label out of range. A file that does not open or read
// is IOError (Corruption where it ends early). An .npz that is no zip, or
// lacks a key, is InvalidArgument; an entry that does not inflate is
// Corruption. *out is set only on success.
Status OpenNpy(const std::string& images, const std::string& labels, ArrayLayout layout,
               std::unique_ptr<RecordSource>* out);
Status OpenNpz(const std::string& npz, const std::string& images_key, const std::string& labels_key,
               ArrayLayout layout, const std::string& scratch_dir, std::unique_ptr<RecordSource>* out);

// Parses a .npy header: its element type ("<f4", "|u1", ...), its shape, and
// where its data begins; InvalidArgument naming what is wrong. *header may
// be part-filled on error.
struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<uint64_t> shape;
  uint64_t data_offset = 0;
};
Status ParseNpyHeader(const uint8_t* data, size_t size, NpyHeader* header);

}  // namespace shoal
