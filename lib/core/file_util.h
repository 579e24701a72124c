// Whole-file reads and crash-safe writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace shoal {

// The whole of `path` ("-": standard input); a file larger than `max_bytes`
// is refused before more than that is held. Returns IOError naming the file
// when it cannot be opened or read, and InvalidArgument when it is too large.
// *contents is unchanged when the file does not open, and may hold a part of
// it on any other error.
Status ReadFile(const std::string& path, std::string* contents, size_t max_bytes = SIZE_MAX);

// Exactly `size` bytes of `fd` at `offset` into `data`: IOError when the read
// fails, Corruption when the file ends first. `where` names the file in both.
// On error *data may hold the bytes read so far.
Status ReadAt(int fd, uint64_t offset, void* data, size_t size, const std::string& where);

// The FNV-1a 64 (core/hash.h) of all that file `fd` holds, read from its
// start in pieces (its offset left alone); IOError naming it as `what` when
// a read fails ("cannot read " + what + ": ..."); *hash is then a partial hash.
Status Fnv1a64OfFile(int fd, const std::string& what, uint64_t* hash);

// Writes `contents` so that `path` holds either its old bytes or all the new
// ones, never a mix: temporary file, fsync, rename, fsync of the directory.
// Without `sync` the file survives the writer's crash but not the machine's
// (no fsync: for what is rewritten every step). A link at `path` is written
// through (its target replaced); a device or a pipe there is written to as
// it is (-o /dev/null); a directory is refused. IOError, the old file kept,
// when the filesystem has less free space than `contents` takes, or a step fails.
// A directory at `path` is InvalidArgument.
Status WriteFileAtomic(const std::string& path, const std::string& contents, bool sync = true);
// The same for a file made of `pieces`, written one after another without
// being joined first (a checkpoint's header and its tensors).
Status WriteFileAtomic(const std::string& path, const std::vector<std::string_view>& pieces,
                       bool sync = true);

}  // namespace shoal
