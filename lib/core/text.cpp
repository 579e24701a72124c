#include "core/text.h"

#include <cctype>
#include <cstdio>

namespace shoal {
namespace {

// The length of the UTF-8 sequence starting at text[i], or 0 if none valid
// starts there (overlong forms, surrogates and values past U+10FFFF refused).
size_t SequenceAt(const std::string& text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t n;
  unsigned int code;
  if ((c & 0xE0) == 0xC0)
    n = 2, code = c & 0x1F;
  else if ((c & 0xF0) == 0xE0)
    n = 3, code = c & 0x0F;
  else if ((c & 0xF8) == 0xF0)
    n = 4, code = c & 0x07;
  else
    return 0;
  if (i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  static const unsigned int kLeast[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < kLeast[n] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

bool IsUtf8(const std::string& text) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = SequenceAt(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string Quoted(const std::string& text, size_t max_bytes) {
  std::string out = "'";
  size_t i = 0;
  for (; i < text.size() && out.size() < max_bytes + 1;) {
    const size_t n = SequenceAt(text, i);
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (n == 0 || (n == 1 && (c < 0x20 || c == 0x7F))) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
      ++i;
      continue;
    }
    out.append(text, i, n);
    i += n;
  }
  if (i < text.size()) out += "...";
  return out + "'";
}

bool IsPlainName(const std::string& name, size_t max_bytes) {
  if (name.empty() || name.size() > max_bytes) return false;
  for (unsigned char c : name)
    if (!std::isalnum(c) && c != '_' && c != '.' && c != '-') return false;
  return true;
}

}  // namespace shoal
