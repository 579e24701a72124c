// Text that came from outside, made safe to keep and to quote.
#pragma once

#include <cstddef>
#include <string>

namespace shoal {

// Whether `text` is valid UTF-8 (what JSON output requires of every string).
bool IsUtf8(const std::string& text);

// `text` for a message: in single quotes, cut to `max_bytes` with "...",
// and every byte that is not printable UTF-8 written as \xNN, so a hostile
// name can neither flood a log nor break the JSON a message ends up in.
std::string Quoted(const std::string& text, size_t max_bytes = 120);

}  // namespace shoal
