#include "data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace shoal {
namespace {

constexpr uint8_t kUnsignedByte = 0x08;
// No published idx array has more dims; a larger rank means garbage.
constexpr int kMaxIdxDims = 8;
// Any published idx file holds far less (Fashion-MNIST: 47 MB).
constexpr uint64_t kMaxIdxBytes = uint64_t{4} << 30;

std::string Hex(unsigned value) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%02x", value);
  return buf;
}

// Closes the gz handle on every return path.
class GzFile {
 public:
  explicit GzFile(const std::string& path) : file_(gzopen(path.c_str(), "rb")) {}
  ~GzFile() {
    if (file_) gzclose(file_);
  }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;
  gzFile get() const { return file_; }

 private:
  gzFile file_;
};

// Reads up to `size` bytes; returns how many were read, or -1 on a zlib error.
long ReadUpTo(gzFile file, void* data, size_t size) {
  size_t done = 0;
  auto* p = static_cast<uint8_t*>(data);
  while (done < size) {
    size_t want = size - done > (1u << 30) ? (1u << 30) : size - done;
    int n = gzread(file, p + done, static_cast<unsigned>(want));
    if (n < 0) return -1;
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return static_cast<long>(done);
}

std::string GzError(gzFile file) {
  int code = 0;
  const char* msg = gzerror(file, &code);
  return msg && *msg ? msg : "read error";
}

}  // namespace

Status ReadIdx(const std::string& path, IdxArray* out) {
  const std::string where = "'" + path + "'";
  errno = 0;
  GzFile file(path);
  if (!file.get())
    return Status::IOError("cannot open " + where + (errno ? std::string(": ") + std::strerror(errno) : ""));

  uint8_t magic[4];
  long n = ReadUpTo(file.get(), magic, sizeof magic);
  if (n < 0) return Status::IOError(where + ": " + GzError(file.get()));
  if (n != 4) return Status::Corruption(where + ": too short for an idx header");
  if (magic[0] != 0 || magic[1] != 0)
    return Status::Corruption(where + ": not an idx file (magic starts " + Hex(magic[0]) + " " +
                              Hex(magic[1]) + ", expected 0x00 0x00)");
  if (magic[2] != kUnsignedByte)
    return Status::Corruption(where + ": element type " + Hex(magic[2]) + " is not unsigned byte (0x08)");
  const int rank = magic[3];
  if (rank < 1 || rank > kMaxIdxDims)
    return Status::Corruption(where + ": rank " + std::to_string(rank) + " is not in 1.." +
                              std::to_string(kMaxIdxDims));

  std::vector<int> dims(rank);
  uint64_t expected = 1;
  for (int i = 0; i < rank; ++i) {
    uint8_t b[4];
    n = ReadUpTo(file.get(), b, sizeof b);
    if (n < 0) return Status::IOError(where + ": " + GzError(file.get()));
    if (n != 4) return Status::Corruption(where + ": header ends inside dim " + std::to_string(i));
    uint32_t d = (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
    if (d == 0 || d > 0x7fffffffu)
      return Status::Corruption(where + ": dim " + std::to_string(i) + " is " + std::to_string(d));
    dims[i] = static_cast<int>(d);
    expected *= d;
    if (expected > kMaxIdxBytes)
      return Status::Corruption(where + ": dims describe more than " + std::to_string(kMaxIdxBytes >> 30) +
                                " GiB of data");
  }

  // The data as it comes, in pieces: a header is only a claim, and memory
  // goes to bytes that are there. One byte past the claim shows trailing data.
  std::vector<uint8_t> bytes;
  constexpr size_t kPiece = 16u << 20;
  while (bytes.size() <= expected) {
    const size_t at = bytes.size();
    bytes.resize(at + std::min<uint64_t>(kPiece, expected + 1 - at));
    n = ReadUpTo(file.get(), bytes.data() + at, bytes.size() - at);
    if (n < 0) return Status::IOError(where + ": " + GzError(file.get()));
    bytes.resize(at + static_cast<size_t>(n));
    if (n == 0) break;
  }
  if (bytes.size() < expected)
    return Status::Corruption(where + ": truncated: dims need " + std::to_string(expected) +
                              " bytes of data, found " + std::to_string(bytes.size()));
  if (bytes.size() > expected)
    return Status::Corruption(where + ": trailing bytes after " + std::to_string(expected) +
                              " bytes of data");
  out->dims = std::move(dims);
  out->bytes = std::move(bytes);
  return Status::Ok();
}

}  // namespace shoal
