#include "data/image_sources.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/file_util.h"
#include "core/text.h"

namespace shoal {
namespace {

namespace fs = std::filesystem;

// An image file larger than this is refused unread: no photograph needs it.
constexpr size_t kMaxImageFileBytes = 64u << 20;

// A file opened for reading by index, closed with its owner.
struct OpenFile {
  std::string path;
  int fd = -1;
  uint64_t size = 0;
  ~OpenFile() {
    if (fd >= 0) close(fd);
  }
  Status Open(const std::string& p) {
    path = p;
    fd = open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::IOError("cannot open '" + p + "': " + std::strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
      return Status::InvalidArgument("'" + p + "' is not a file");
    size = static_cast<uint64_t>(st.st_size);
    return Status::Ok();
  }
};

// ---- image files ----

class ImageFiles : public RecordSource {
 public:
  ImageFiles(std::vector<std::pair<std::string, int32_t>> files, std::vector<std::string> classes)
      : files_(std::move(files)), classes_(std::move(classes)) {}
  uint64_t size() const override { return files_.size(); }
  Status Read(uint64_t i, int channels, Image* image, int32_t* label) const override {
    std::string bytes;
    SHOAL_RETURN_IF_ERROR(ReadFile(files_[i].first, &bytes, kMaxImageFileBytes));
    *label = files_[i].second;
    return DecodeImage(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), channels, image)
        .Within("'" + files_[i].first + "'");
  }
  bool Encoded(uint64_t i, std::string* bytes) const override {
    ImageCodec codec;
    return ReadFile(files_[i].first, bytes, kMaxImageFileBytes).ok() &&
           SniffCodec(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size(), &codec).ok() &&
           codec == ImageCodec::kJpeg;
  }
  std::string Name(uint64_t i) const override { return "'" + files_[i].first + "'"; }
  const std::vector<std::string>& class_names() const override { return classes_; }

 private:
  std::vector<std::pair<std::string, int32_t>> files_;
  std::vector<std::string> classes_;
};

bool IsImageName(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* ext : {".jpg", ".jpeg", ".png"}) {
    const size_t n = std::strlen(ext);
    if (lower.size() > n && lower.compare(lower.size() - n, n, ext) == 0) return true;
  }
  return false;
}

void Skip(FolderSkips* skips, const std::string& what) {
  if (skips->first.size() < kNamedSkips) skips->first.push_back(what);
}

// The entries of a directory, sorted by name, not following what they link to.
Status ListDir(const std::string& dir, std::vector<fs::directory_entry>* entries) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return Status::IOError("cannot list '" + dir + "': " + ec.message());
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) return Status::IOError("cannot list '" + dir + "': " + ec.message());
    entries->push_back(*it);
  }
  std::sort(entries->begin(), entries->end(),
            [](const fs::directory_entry& a, const fs::directory_entry& b) { return a.path() < b.path(); });
  return Status::Ok();
}

// ---- CIFAR ----

class Cifar : public RecordSource {
 public:
  Cifar(std::vector<std::unique_ptr<OpenFile>> files, std::vector<uint64_t> starts, bool hundred, bool coarse,
        std::vector<std::string> classes)
      : files_(std::move(files)),
        starts_(std::move(starts)),
        hundred_(hundred),
        coarse_(coarse),
        classes_(std::move(classes)) {}
  uint64_t size() const override { return starts_.back(); }
  Status Read(uint64_t i, int channels, Image* image, int32_t* label) const override {
    const size_t f =
        static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), i) - starts_.begin() - 1);
    const uint64_t record = RecordBytes();
    uint8_t bytes[3074];
    SHOAL_RETURN_IF_ERROR(ReadAt(files_[f]->fd, (i - starts_[f]) * record, bytes, record, Name(i)));
    *label = hundred_ ? bytes[coarse_ ? 0 : 1] : bytes[0];
    const uint8_t* planes = bytes + (hundred_ ? 2 : 1);
    Image rgb;
    rgb.width = rgb.height = 32;
    rgb.channels = 3;
    rgb.pixels.resize(rgb.bytes());
    for (int p = 0; p < 1024; ++p)
      for (int c = 0; c < 3; ++c) rgb.pixels[3 * p + c] = planes[1024 * c + p];
    if (channels == 0 || channels == 3) {
      *image = std::move(rgb);
    } else {
      ConvertChannels(rgb, channels, image);
    }
    return Status::Ok();
  }
  std::string Name(uint64_t i) const override {
    const size_t f =
        static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), i) - starts_.begin() - 1);
    return "'" + files_[f]->path + "' record " + std::to_string(i - starts_[f]);
  }
  const std::vector<std::string>& class_names() const override { return classes_; }
  uint64_t RecordBytes() const { return hundred_ ? 3074 : 3073; }

 private:
  std::vector<std::unique_ptr<OpenFile>> files_;
  std::vector<uint64_t> starts_;  // each file's first record, then the total
  bool hundred_, coarse_;
  std::vector<std::string> classes_;
};

Status OpenCifarFiles(const std::vector<std::string>& paths, bool hundred, bool coarse,
                      const std::vector<std::string>& classes, std::unique_ptr<RecordSource>* out) {
  const uint64_t record = hundred ? 3074 : 3073;
  std::vector<std::unique_ptr<OpenFile>> files;
  std::vector<uint64_t> starts{0};
  for (const std::string& path : paths) {
    files.push_back(std::make_unique<OpenFile>());
    SHOAL_RETURN_IF_ERROR(files.back()->Open(path));
    const uint64_t size = files.back()->size;
    if (size == 0 || size % record != 0)
      return Status::InvalidArgument("'" + path + "' is " + std::to_string(size) +
                                     " bytes, not a whole number of " + std::to_string(record) +
                                     "-byte CIFAR-" + (hundred ? "100" : "10") + " records");
    starts.push_back(starts.back() + size / record);
  }
  // Every label must name a class; CIFAR-100's coarse labels are 20, fine ones 100.
  const int classes_count = hundred ? (coarse ? 20 : 100) : 10;
  auto source = std::make_unique<Cifar>(std::move(files), std::move(starts), hundred, coarse, classes);
  for (uint64_t i = 0; i < source->size(); ++i) {
    Image image;
    int32_t label = 0;
    SHOAL_RETURN_IF_ERROR(source->Read(i, 3, &image, &label));
    if (label >= classes_count)
      return Status::InvalidArgument(source->Name(i) + ": label " + std::to_string(label) +
                                     " is not one of the " + std::to_string(classes_count) + " classes");
  }
  *out = std::move(source);
  return Status::Ok();
}

std::vector<std::string> ReadNames(const std::string& path) {
  std::vector<std::string> names;
  std::string text;
  if (!ReadFile(path, &text, 1 << 20).ok()) return names;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    if (!line.empty()) names.push_back(line);
  }
  return names;
}

// ---- numpy ----

size_t ItemBytes(const std::string& descr) {
  return descr.empty() ? 0 : static_cast<size_t>(descr.back() - '0');
}

bool IsIntegerType(const std::string& d) {
  return d == "|u1" || d == "|i1" || d == "<u2" || d == "<i2" || d == "<u4" || d == "<i4" || d == "<u8" ||
         d == "<i8";
}

int64_t LoadInteger(const uint8_t* p, const std::string& d) {
  uint64_t u = 0;
  const size_t n = ItemBytes(d);
  for (size_t i = 0; i < n; ++i) u |= uint64_t{p[i]} << (8 * i);
  if (d[1] == 'u') return static_cast<int64_t>(u);
  const int shift = static_cast<int>(64 - 8 * n);
  return static_cast<int64_t>(u << shift) >> shift;  // sign-extended
}

class NpyImages : public RecordSource {
 public:
  NpyImages(std::unique_ptr<OpenFile> file, NpyHeader header, ArrayLayout layout, std::vector<int32_t> labels,
            std::vector<std::string> scratch)
      : file_(std::move(file)),
        header_(std::move(header)),
        layout_(layout),
        labels_(std::move(labels)),
        scratch_(std::move(scratch)) {
    const auto& s = header_.shape;
    if (s.size() == 3) {
      h_ = s[1], w_ = s[2], c_ = 1;
    } else if (layout_ == ArrayLayout::kNhwc) {
      h_ = s[1], w_ = s[2], c_ = s[3];
    } else {
      c_ = s[1], h_ = s[2], w_ = s[3];
    }
  }
  ~NpyImages() override {
    file_.reset();
    for (const std::string& path : scratch_) unlink(path.c_str());
  }
  uint64_t size() const override { return labels_.size(); }
  Status Read(uint64_t i, int channels, Image* image, int32_t* label) const override {
    const uint64_t elements = h_ * w_ * c_;
    const bool floats = header_.descr == "<f4";
    std::vector<uint8_t> raw(elements * (floats ? 4 : 1));
    SHOAL_RETURN_IF_ERROR(
        ReadAt(file_->fd, header_.data_offset + i * raw.size(), raw.data(), raw.size(), Name(i)));
    Image stored;
    stored.width = static_cast<int>(w_);
    stored.height = static_cast<int>(h_);
    stored.channels = static_cast<int>(c_);
    stored.pixels.resize(elements);
    for (uint64_t e = 0; e < elements; ++e) {
      // Where element e (in HWC order) lies in the array.
      const uint64_t pixel = e / c_, c = e % c_;
      const uint64_t at = layout_ == ArrayLayout::kNhwc || c_ == 1 ? e : c * h_ * w_ + pixel;
      if (!floats) {
        stored.pixels[e] = raw[at];
        continue;
      }
      float x;
      std::memcpy(&x, raw.data() + 4 * at, 4);
      if (!(x >= 0.0f && x <= 1.0f))
        return Status::InvalidArgument(Name(i) + ": value " + std::to_string(x) +
                                       " is outside [0, 1] (float32 images are read as [0, 1]; give uint8 "
                                       "pixels of 0..255 instead)");
      stored.pixels[e] = static_cast<uint8_t>(std::lround(x * 255.0f));
    }
    *label = labels_[i];
    if (channels == 0 || channels == stored.channels)
      *image = std::move(stored);
    else
      ConvertChannels(stored, channels, image);
    return Status::Ok();
  }
  std::string Name(uint64_t i) const override { return "'" + file_->path + "' image " + std::to_string(i); }
  const std::vector<std::string>& class_names() const override { return none_; }

 private:
  std::unique_ptr<OpenFile> file_;
  NpyHeader header_;
  ArrayLayout layout_;
  std::vector<int32_t> labels_;
  std::vector<std::string> scratch_;  // inflated from an .npz: removed with the source
  uint64_t h_ = 0, w_ = 0, c_ = 0;
  std::vector<std::string> none_;
};

Status OpenNpyFile(const std::string& path, std::unique_ptr<OpenFile>* file, NpyHeader* header) {
  *file = std::make_unique<OpenFile>();
  SHOAL_RETURN_IF_ERROR((*file)->Open(path));
  uint8_t head[65536 + 12];
  const size_t n = static_cast<size_t>(std::min<uint64_t>((*file)->size, sizeof head));
  SHOAL_RETURN_IF_ERROR(ReadAt((*file)->fd, 0, head, n, "'" + path + "'"));
  SHOAL_RETURN_IF_ERROR(ParseNpyHeader(head, n, header).Within("'" + path + "'"));
  if (header->fortran_order)
    return Status::InvalidArgument("'" + path + "': a Fortran-ordered array is not read");
  uint64_t elements = 1;
  for (uint64_t d : header->shape) {
    if (d != 0 && elements > UINT64_MAX / d / 8)
      return Status::InvalidArgument("'" + path + "': its shape's size overflows");
    elements *= d;
  }
  const uint64_t expected = header->data_offset + elements * ItemBytes(header->descr);
  if (expected != (*file)->size)
    return Status::InvalidArgument("'" + path + "': its header says " + std::to_string(elements) +
                                   " elements of " + std::to_string(ItemBytes(header->descr)) + " bytes (" +
                                   std::to_string(expected) + " bytes in all), but the file is " +
                                   std::to_string((*file)->size) + " bytes");
  return Status::Ok();
}

// Inflates `name` of the archive into `path`, at most `limit` bytes.
Status Extract(zip_t* zip, const std::string& archive, const std::string& name, const std::string& path) {
  const zip_int64_t index = zip_name_locate(zip, name.c_str(), 0);
  if (index < 0) return Status::InvalidArgument("'" + archive + "' holds no array '" + name + "'");
  zip_file_t* in = zip_fopen_index(zip, static_cast<zip_uint64_t>(index), 0);
  if (!in) return Status::Corruption("'" + archive + "': cannot read '" + name + "': " + zip_strerror(zip));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  std::vector<char> chunk(1 << 20);
  Status s;
  // An array's size is bounded by its header; the first piece holds the header.
  uint64_t written = 0, limit = UINT64_MAX;
  for (;;) {
    const zip_int64_t n = zip_fread(in, chunk.data(), chunk.size());
    if (n < 0) {
      s = Status::Corruption("'" + archive + "': '" + name + "' does not inflate: " + zip_file_strerror(in));
      break;
    }
    if (n == 0) break;
    if (written == 0) {
      NpyHeader header;
      s = ParseNpyHeader(reinterpret_cast<const uint8_t*>(chunk.data()), static_cast<size_t>(n), &header)
              .Within("'" + archive + "': '" + name + "'");
      if (!s.ok()) break;
      uint64_t elements = 1;
      for (uint64_t d : header.shape)
        elements = d != 0 && elements > UINT64_MAX / d / 8 ? UINT64_MAX / 16 : elements * d;
      limit = header.data_offset + elements * ItemBytes(header.descr);
    }
    written += static_cast<uint64_t>(n);
    if (written > limit) {
      s = Status::InvalidArgument("'" + archive + "': '" + name + "' holds more than its header says");
      break;
    }
    out.write(chunk.data(), n);
    if (!out) {
      s = Status::IOError("cannot write '" + path + "'");
      break;
    }
  }
  zip_fclose(in);
  return s;
}

}  // namespace

namespace {

class Limited : public RecordSource {
 public:
  Limited(std::unique_ptr<RecordSource> source, uint64_t limit) : source_(std::move(source)), limit_(limit) {}
  uint64_t size() const override { return std::min(limit_, source_->size()); }
  Status Read(uint64_t i, int channels, Image* image, int32_t* label) const override {
    return source_->Read(i, channels, image, label);
  }
  bool Encoded(uint64_t i, std::string* bytes) const override { return source_->Encoded(i, bytes); }
  std::string Name(uint64_t i) const override { return source_->Name(i); }
  const std::vector<std::string>& class_names() const override { return source_->class_names(); }

 private:
  std::unique_ptr<RecordSource> source_;
  uint64_t limit_;
};

}  // namespace

std::unique_ptr<RecordSource> LimitRecords(std::unique_ptr<RecordSource> source, uint64_t limit) {
  return std::make_unique<Limited>(std::move(source), limit);
}

Status OpenImageFolder(const std::string& dir, const std::vector<std::string>* classes,
                       std::unique_ptr<RecordSource>* out, FolderSkips* skips) {
  std::vector<fs::directory_entry> entries;
  SHOAL_RETURN_IF_ERROR(ListDir(dir, &entries));
  std::vector<std::string> names;
  std::vector<std::pair<std::string, int32_t>> files;
  std::map<std::string, int32_t> given;
  if (classes)
    for (size_t i = 0; i < classes->size(); ++i) given[(*classes)[i]] = static_cast<int32_t>(i);
  for (const fs::directory_entry& entry : entries) {
    std::error_code ec;
    if (!entry.is_directory(ec)) {
      ++skips->other_files;
      Skip(skips, entry.path().string());
      continue;
    }
    const std::string name = entry.path().filename().string();
    std::vector<fs::directory_entry> images;
    SHOAL_RETURN_IF_ERROR(ListDir(entry.path().string(), &images));
    std::vector<std::string> paths;
    for (const fs::directory_entry& image : images) {
      // A link is followed to a file; one to nothing, or in a loop, is passed over.
      if (!image.is_regular_file(ec) || !IsImageName(image.path().filename().string())) {
        ++skips->other_files;
        Skip(skips, image.path().string());
        continue;
      }
      paths.push_back(image.path().string());
    }
    if (paths.empty()) {
      ++skips->empty_classes;
      Skip(skips, entry.path().string() + "/ (no images)");
      continue;
    }
    int32_t label = static_cast<int32_t>(names.size());
    if (classes) {
      auto it = given.find(name);
      if (it == given.end())
        return Status::InvalidArgument("'" + dir + "' has class '" + name +
                                       "', which the training images lack");
      label = it->second;
    }
    names.push_back(name);
    for (std::string& path : paths) files.emplace_back(std::move(path), label);
  }
  if (files.empty())
    return Status::InvalidArgument("'" + dir +
                                   "' holds no images in class folders (DIR/<class>/*.jpg|jpeg|png)");
  *out = std::make_unique<ImageFiles>(std::move(files), classes ? *classes : names);
  return Status::Ok();
}

Status OpenImageList(const std::string& list, std::unique_ptr<RecordSource>* out) {
  std::string text;
  SHOAL_RETURN_IF_ERROR(ReadFile(list, &text, 1u << 30));
  const std::string base = fs::path(list).parent_path().string();
  std::vector<std::pair<std::string, int32_t>> files;
  std::istringstream in(text);
  int32_t classes = 0;
  int line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    const size_t end = line.find_last_not_of(" \t\r");
    if (end == std::string::npos) continue;  // blank
    line.resize(end + 1);
    const size_t gap = line.find_last_of(" \t");
    const std::string where = "'" + list + "' line " + std::to_string(line_number);
    if (gap == std::string::npos) return Status::InvalidArgument(where + ": expected 'PATH LABEL'");
    const std::string label_text = line.substr(gap + 1);
    std::string path = line.substr(0, line.find_last_not_of(" \t", gap) + 1);
    char* rest = nullptr;
    errno = 0;
    const long label = std::strtol(label_text.c_str(), &rest, 10);
    if (path.empty() || *rest != '\0' || errno != 0 || label < 0 || label > (1 << 24))
      return Status::InvalidArgument(where + ": expected 'PATH LABEL' with a class number 0.." +
                                     std::to_string(1 << 24) + ", got " + Quoted(line, 80));
    if (!path.empty() && path[0] != '/' && !base.empty()) path = base + "/" + path;
    files.emplace_back(path, static_cast<int32_t>(label));
    classes = std::max(classes, static_cast<int32_t>(label) + 1);
  }
  if (files.empty()) return Status::InvalidArgument("'" + list + "' names no images");
  *out = std::make_unique<ImageFiles>(std::move(files), std::vector<std::string>());
  return Status::Ok();
}

Status OpenCifar(const std::string& dir, bool hundred, bool coarse, std::unique_ptr<RecordSource>* train,
                 std::unique_ptr<RecordSource>* test) {
  std::vector<std::string> train_files, classes;
  if (hundred) {
    train_files = {dir + "/train.bin"};
    classes = ReadNames(dir + (coarse ? "/coarse_label_names.txt" : "/fine_label_names.txt"));
  } else {
    for (int i = 1; i <= 5; ++i) train_files.push_back(dir + "/data_batch_" + std::to_string(i) + ".bin");
    classes = ReadNames(dir + "/batches.meta.txt");
  }
  if (classes.size() != static_cast<size_t>(hundred ? (coarse ? 20 : 100) : 10)) classes.clear();
  SHOAL_RETURN_IF_ERROR(OpenCifarFiles(train_files, hundred, coarse, classes, train));
  return OpenCifarFiles({dir + (hundred ? "/test.bin" : "/test_batch.bin")}, hundred, coarse, classes, test);
}

namespace {

// The value of 'key' in a .npy header's dict: a quoted string's text, a
// tuple's inside, or a bare word; empty where there is none.
std::string NpyValue(const std::string& text, const std::string& key) {
  size_t v = text.find("'" + key + "'");
  if (v == std::string::npos || (v = text.find(':', v)) == std::string::npos) return "";
  for (++v; v < text.size() && text[v] == ' ';) ++v;
  if (v >= text.size()) return "";
  if (text[v] == '\'' || text[v] == '(') {
    const size_t end = text.find(text[v] == '(' ? ')' : '\'', v + 1);
    return end == std::string::npos ? "" : text.substr(v + 1, end - v - 1);
  }
  const size_t end = text.find_first_of(",}", v);
  return end == std::string::npos ? "" : text.substr(v, end - v);
}

}  // namespace

Status ParseNpyHeader(const uint8_t* data, size_t size, NpyHeader* header) {
  static const uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (size < 10 || !std::equal(kMagic, kMagic + 6, data))
    return Status::InvalidArgument("not a .npy file (bad magic)");
  const int major = data[6];
  if (major < 1 || major > 3)
    return Status::InvalidArgument(".npy format version " + std::to_string(major) + " is not read");
  const size_t length_bytes = major == 1 ? 2 : 4;
  if (size < 8 + length_bytes) return Status::InvalidArgument("a .npy header cut short");
  size_t length = 0;
  for (size_t i = 0; i < length_bytes; ++i) length |= static_cast<size_t>(data[8 + i]) << (8 * i);
  const size_t start = 8 + length_bytes;
  if (length > 65536 || start + length > size)
    return Status::InvalidArgument("a .npy header of " + std::to_string(length) +
                                   " bytes, cut short or too long");
  const std::string text(reinterpret_cast<const char*>(data + start), length);
  header->data_offset = start + length;
  // {'descr': '<f4', 'fortran_order': False, 'shape': (60000, 28, 28), }
  auto value_of = [&](const std::string& key) { return NpyValue(text, key); };
  header->descr = value_of("descr");
  const std::string order = value_of("fortran_order");
  const std::string shape = value_of("shape");
  if (header->descr.empty() || order.empty() || text.find("'shape'") == std::string::npos)
    return Status::InvalidArgument("a .npy header without descr, fortran_order or shape: " +
                                   Quoted(text, 120));
  if (header->descr != "|u1" && header->descr != "<f4" && !IsIntegerType(header->descr))
    return Status::InvalidArgument("elements of type '" + header->descr +
                                   "': uint8 or float32 images and integer labels are read");
  header->fortran_order = order == "True";
  if (!header->fortran_order && order != "False")
    return Status::InvalidArgument("fortran_order " + Quoted(order, 20));
  header->shape.clear();
  std::istringstream dims(shape);
  for (std::string d; std::getline(dims, d, ',');) {
    const size_t first = d.find_first_not_of(' ');
    if (first == std::string::npos) continue;
    d = d.substr(first, d.find_last_not_of(' ') - first + 1);
    if (d.empty() || d.size() > 12 || d.find_first_not_of("0123456789") != std::string::npos)
      return Status::InvalidArgument("a shape of " + Quoted(shape, 60));
    header->shape.push_back(std::stoull(d));
  }
  if (header->shape.empty() || header->shape.size() > 4)
    return Status::InvalidArgument("a shape of " + Quoted(shape, 60) + ": 1 to 4 dims are read");
  return Status::Ok();
}

namespace {

// OpenNpy's work; `scratch` names files the source removes when it goes.
Status OpenArrays(const std::string& images, const std::string& labels, ArrayLayout layout,
                  std::vector<std::string> scratch, std::unique_ptr<RecordSource>* out) {
  std::unique_ptr<OpenFile> image_file, label_file;
  NpyHeader image_header, label_header;
  SHOAL_RETURN_IF_ERROR(OpenNpyFile(images, &image_file, &image_header));
  SHOAL_RETURN_IF_ERROR(OpenNpyFile(labels, &label_file, &label_header));
  const auto& s = image_header.shape;
  if (image_header.descr != "|u1" && image_header.descr != "<f4")
    return Status::InvalidArgument("'" + images + "': images must be uint8 or float32, not '" +
                                   image_header.descr + "'");
  if (s.size() != 3 && s.size() != 4)
    return Status::InvalidArgument("'" + images +
                                   "': images must be [N, H, W, C], [N, C, H, W] or [N, H, W], not " +
                                   std::to_string(s.size()) + " dims");
  const uint64_t c = s.size() == 3 ? 1 : layout == ArrayLayout::kNhwc ? s[3] : s[1];
  const uint64_t h = s.size() == 3 ? s[1] : layout == ArrayLayout::kNhwc ? s[1] : s[2];
  const uint64_t w = s.size() == 3 ? s[2] : layout == ArrayLayout::kNhwc ? s[2] : s[3];
  if ((c != 1 && c != 3) || h < 1 || w < 1 || h > kMaxImageSide || w > kMaxImageSide ||
      h * w > static_cast<uint64_t>(kMaxImagePixels))
    return Status::InvalidArgument("'" + images + "': images of " + std::to_string(c) + " × " +
                                   std::to_string(h) + " × " + std::to_string(w) +
                                   " (channels × height × width): 1 or 3 channels of at most " +
                                   std::to_string(kMaxImageSide) + " a side are read");
  if (!IsIntegerType(label_header.descr) || label_header.shape.size() != 1 || label_header.shape[0] != s[0])
    return Status::InvalidArgument("'" + labels + "': labels must be " + std::to_string(s[0]) +
                                   " integers (shape [N]) to match the images");
  std::vector<uint8_t> raw(label_file->size - label_header.data_offset);
  SHOAL_RETURN_IF_ERROR(
      ReadAt(label_file->fd, label_header.data_offset, raw.data(), raw.size(), "'" + labels + "'"));
  std::vector<int32_t> values(s[0]);
  const size_t item = ItemBytes(label_header.descr);
  for (uint64_t i = 0; i < s[0]; ++i) {
    const int64_t v = LoadInteger(raw.data() + i * item, label_header.descr);
    if (v < 0 || v > (1 << 24))
      return Status::InvalidArgument("'" + labels + "': label " + std::to_string(i) + " is " +
                                     std::to_string(v) + ", not a class number 0.." +
                                     std::to_string(1 << 24));
    values[i] = static_cast<int32_t>(v);
  }
  *out = std::make_unique<NpyImages>(std::move(image_file), std::move(image_header), layout,
                                     std::move(values), std::move(scratch));
  return Status::Ok();
}

}  // namespace

Status OpenNpy(const std::string& images, const std::string& labels, ArrayLayout layout,
               std::unique_ptr<RecordSource>* out) {
  return OpenArrays(images, labels, layout, {}, out);
}

Status OpenNpz(const std::string& npz, const std::string& images_key, const std::string& labels_key,
               ArrayLayout layout, const std::string& scratch_dir, std::unique_ptr<RecordSource>* out) {
  int error = 0;
  zip_t* zip = zip_open(npz.c_str(), ZIP_RDONLY, &error);
  if (!zip) {
    zip_error_t e;
    zip_error_init_with_code(&e, error);
    const Status s =
        Status::InvalidArgument("'" + npz + "' is not a readable .npz (zip): " + zip_error_strerror(&e));
    zip_error_fini(&e);
    return s;
  }
  const std::string images = scratch_dir + "/.npz-" + images_key + ".npy";
  const std::string labels = scratch_dir + "/.npz-" + labels_key + ".npy";
  Status s = Extract(zip, npz, images_key + ".npy", images);
  if (s.ok()) s = Extract(zip, npz, labels_key + ".npy", labels);
  zip_discard(zip);
  if (s.ok()) s = OpenArrays(images, labels, layout, {images}, out);
  unlink(labels.c_str());  // the labels are read whole
  if (!s.ok()) unlink(images.c_str());
  return s;
}

}  // namespace shoal
