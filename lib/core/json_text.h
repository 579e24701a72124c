// JSON in and out at the boundary. ParseJson is how every reader of JSON
// from outside (plans, manifests, checkpoint headers, messages' text, the
// records tools read back) turns text into a tree: bounded in size, in
// nesting (nothing a reader or a printer does with the tree can then run out
// of stack) and in arrays and objects per byte (the tree's memory stays
// within a small multiple of the text's), never throwing, and naming where
// it failed. JsonText writes any
// tree, also one holding bytes that are not UTF-8 (a path from a command
// line): they become U+FFFD instead of an exception.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace shoal {

inline constexpr int kMaxJsonDepth = 64;

// Parses `text` (named `source` in messages) into `out`: at most `max_bytes`,
// kMaxJsonDepth levels of arrays and objects, and one array or object per
// 16 bytes (at least 1024 allowed).
Status ParseJson(const std::string& text, const std::string& source, nlohmann::json* out,
                 size_t max_bytes = 64u << 20);
// The same for bytes [begin, end).
Status ParseJson(const char* begin, const char* end, const std::string& source, nlohmann::json* out,
                 size_t max_bytes = 64u << 20);

// `j` as text; `indent` < 0: one line.
std::string JsonText(const nlohmann::json& j, int indent = -1);

}  // namespace shoal
