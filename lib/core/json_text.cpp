#include "core/json_text.h"

#include "core/text.h"

namespace shoal {
namespace {

// The deepest nesting of [ and { outside strings, stopping once past `limit`.
int NestingDepth(const char* p, const char* end, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (; p < end; ++p) {
    const char c = *p;
    if (in_string) {
      if (c == '\\') ++p;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest && (deepest = depth) > limit) return deepest;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

Status ParseJson(const char* begin, const char* end, const std::string& source, nlohmann::json* out,
                 size_t max_bytes) {
  const size_t size = static_cast<size_t>(end - begin);
  if (size > max_bytes)
    return Status::InvalidArgument(source + ": " + std::to_string(size) + " bytes of JSON, at most " +
                                   std::to_string(max_bytes) + " here");
  if (NestingDepth(begin, end, kMaxJsonDepth) > kMaxJsonDepth)
    return Status::InvalidArgument(source + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  try {
    *out = nlohmann::json::parse(begin, end);
  } catch (const nlohmann::json::parse_error& e) {
    return Status::InvalidArgument(source + ": not valid JSON at byte " + std::to_string(e.byte) + ": " +
                                   Quoted(e.what(), 200));
  } catch (const std::exception& e) {
    return Status::InvalidArgument(source + ": cannot read JSON: " + Quoted(e.what(), 200));
  }
  return Status::Ok();
}

Status ParseJson(const std::string& text, const std::string& source, nlohmann::json* out, size_t max_bytes) {
  return ParseJson(text.data(), text.data() + text.size(), source, out, max_bytes);
}

std::string JsonText(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace shoal
