#include "core/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/fault_injection.h"
#include "core/hash.h"
#include "core/text.h"

namespace shoal {
namespace {

std::string ErrnoText() { return std::strerror(errno); }

std::string DirectoryOf(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

bool WriteAll(int fd, const char* p, size_t left) {
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

// Bytes [from, to) of the file that `pieces` make, one piece after another.
bool WriteRange(int fd, const std::vector<std::string_view>& pieces, size_t from, size_t to) {
  size_t start = 0;
  for (std::string_view piece : pieces) {
    const size_t end = start + piece.size();
    const size_t lo = std::max(start, from), hi = std::min(end, to);
    if (lo < hi && !WriteAll(fd, piece.data() + (lo - start), hi - lo)) return false;
    start = end;
  }
  return true;
}

}  // namespace

Status ReadAt(int fd, uint64_t offset, void* data, size_t size, const std::string& where) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = pread(fd, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOError("cannot read " + where + ": " + std::strerror(errno));
    if (n == 0) return Status::Corruption(where + ": the file ends early");
    p += n;
    offset += static_cast<uint64_t>(n);
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status ReadFile(const std::string& path, std::string* contents, size_t max_bytes) {
  const bool standard_input = path == "-";
  const std::string name = standard_input ? "standard input" : Quoted(path);
  std::FILE* in = standard_input ? stdin : std::fopen(path.c_str(), "rb");
  if (!in) return Status::IOError("cannot open " + name + ": " + ErrnoText());
  contents->clear();
  char buf[1 << 16];
  size_t n;
  bool too_large = false;
  while ((n = std::fread(buf, 1, sizeof buf, in)) > 0) {
    if (contents->size() + n > max_bytes) {
      too_large = true;
      break;
    }
    contents->append(buf, n);
  }
  const bool failed = std::ferror(in);
  if (!standard_input) std::fclose(in);
  if (too_large)
    return Status::InvalidArgument(name + " is larger than " + std::to_string(max_bytes) + " bytes");
  if (failed) return Status::IOError("cannot read " + name + ": " + ErrnoText());
  return Status::Ok();
}

Status Fnv1a64OfFile(int fd, const std::string& what, uint64_t* hash) {
  *hash = kFnv1a64Start;
  std::vector<unsigned char> piece(1 << 20);
  for (uint64_t at = 0;;) {
    const ssize_t n = pread(fd, piece.data(), piece.size(), static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOError("cannot read " + what + ": " + std::strerror(errno));
    if (n == 0) return Status::Ok();
    *hash = Fnv1a64(*hash, piece.data(), static_cast<size_t>(n));
    at += static_cast<uint64_t>(n);
  }
}

Status WriteFileAtomic(const std::string& path, const std::string& contents, bool sync) {
  return WriteFileAtomic(path, std::vector<std::string_view>{contents}, sync);
}

Status WriteFileAtomic(const std::string& given, const std::vector<std::string_view>& pieces, bool sync) {
  size_t total = 0;
  for (std::string_view piece : pieces) total += piece.size();
  // A link is written through: its target is replaced, the link kept. A
  // device or a pipe is written to as it is (renaming over it would replace
  // /dev/null itself); a directory is refused.
  std::string path = given;
  std::error_code ec;
  if (std::filesystem::is_symlink(std::filesystem::symlink_status(given, ec))) {
    std::filesystem::path target = std::filesystem::read_symlink(given, ec);
    if (!ec)
      path = (target.is_absolute() ? target : std::filesystem::path(given).parent_path() / target).string();
  }
  const auto status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status))
    return Status::InvalidArgument("'" + given + "' is a directory: write to a file's path");
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    // A device or a pipe (-o /dev/null, a FIFO) takes the bytes as they come: nothing to replace.
    int fd = ::open(path.c_str(), O_WRONLY);
    if (fd < 0) return Status::IOError("cannot open '" + given + "': " + ErrnoText());
    const bool written = WriteRange(fd, pieces, 0, total);
    Status s = written ? Status::Ok() : Status::IOError("cannot write '" + given + "': " + ErrnoText());
    ::close(fd);
    return s;
  }
  // A write that cannot fit is refused before it starts (root may also use the reserved blocks).
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  struct statvfs fs {};
  if (::statvfs(parent.empty() ? "." : parent.c_str(), &fs) == 0) {
    const uint64_t free_bytes = uint64_t{::geteuid() == 0 ? fs.f_bfree : fs.f_bavail} * fs.f_frsize;
    if (free_bytes < total)
      return Status::IOError("cannot write '" + given + "': it takes " + std::to_string(total) +
                             " bytes and its filesystem has " + std::to_string(free_bytes) + " free");
  }
  // A name of its own (mkstemp): never a file or link already there, nor another writer's.
  std::string tmp = path + ".tmp.XXXXXX";
  int fd = ::mkstemp(&tmp[0]);
  if (fd < 0) return Status::IOError("cannot create '" + path + ".tmp.*': " + ErrnoText());
  ::fchmod(fd, 0644);
  // In two halves, so that a test can die between them (SHOAL_CRASH_AT=atomic-write:N).
  const size_t half = total / 2;
  bool written = WriteRange(fd, pieces, 0, half);
  if (written) CrashPoint("atomic-write");
  written = written && WriteRange(fd, pieces, half, total);
  if (!written) {
    Status s = Status::IOError("cannot write '" + tmp + "': " + ErrnoText());
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  }
  if ((sync && ::fsync(fd) != 0) || ::close(fd) != 0) {
    Status s = Status::IOError("cannot sync '" + tmp + "': " + ErrnoText());
    ::unlink(tmp.c_str());
    return s;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = Status::IOError("cannot rename '" + tmp + "' to '" + path + "': " + ErrnoText());
    ::unlink(tmp.c_str());
    return s;
  }
  if (!sync) return Status::Ok();
  // The rename itself lives in the directory: sync it so it survives a crash.
  int dfd = ::open(DirectoryOf(path).c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return Status::Ok();
}

}  // namespace shoal
