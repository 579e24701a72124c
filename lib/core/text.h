// Text that came from outside, made safe to keep and to quote.
#pragma once

#include <cstddef>
#include <string>

namespace shoal {

// Whether `text` is valid UTF-8 (what JSON output requires of every string).
bool IsUtf8(const std::string& text);

// Whether `name` may name a layer, and so a parameter (layer.weight) and
// what is written under its name (an archive's member, a file): 1 to
// `max_bytes` of A-Z a-z 0-9 _ . - and no other, so no path, quote or control byte.
bool IsPlainName(const std::string& name, size_t max_bytes);
inline constexpr const char* kPlainNameChars = "A-Z a-z 0-9 _ . -";
// A layer's name, and a parameter's: the layer's and a suffix (".weight_ih").
inline constexpr size_t kMaxLayerNameBytes = 128, kMaxParamNameBytes = 160;

// `text` for a message: in single quotes, cut to `max_bytes` with "...",
// and every byte that is not printable UTF-8 written as \xNN, so a hostile
// name can neither flood a log nor break the JSON a message ends up in.
std::string Quoted(const std::string& text, size_t max_bytes = 120);

}  // namespace shoal
