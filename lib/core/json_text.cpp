#include "core/json_text.h"

#include <algorithm>

#include "core/text.h"

namespace shoal {
namespace {

// What a text would make of a tree, seen before it is parsed: the deepest
// nesting of [ and { outside strings (the scan stops once past `limit`), and
// how many arrays and objects it opens. A container costs a tree ~20 times
// its two bytes of text (nlohmann's node, its vector or map): a file of
// "[]," would take ~1.5 GB for 64 MB. Legitimate files (plans, headers,
// manifests, records) open one every 20 bytes or more.
struct JsonShape {
  int depth = 0;
  size_t containers = 0;
};
JsonShape ShapeOf(const char* p, const char* end, int limit) {
  JsonShape shape;
  int depth = 0;
  bool in_string = false;
  for (; p < end; ++p) {
    const char c = *p;
    if (in_string) {
      if (c == '\\')
        ++p;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      ++shape.containers;
      if (++depth > shape.depth && (shape.depth = depth) > limit) return shape;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return shape;
}

constexpr size_t kTextBytesPerContainer = 16;

}  // namespace

Status ParseJson(const char* begin, const char* end, const std::string& source, nlohmann::json* out,
                 size_t max_bytes) {
  const size_t size = static_cast<size_t>(end - begin);
  if (size > max_bytes)
    return Status::InvalidArgument(source + ": " + std::to_string(size) + " bytes of JSON, at most " +
                                   std::to_string(max_bytes) + " here");
  const JsonShape shape = ShapeOf(begin, end, kMaxJsonDepth);
  if (shape.depth > kMaxJsonDepth)
    return Status::InvalidArgument(source + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                                   " levels");
  if (shape.containers > std::max<size_t>(1024, size / kTextBytesPerContainer))
    return Status::InvalidArgument(source + ": " + std::to_string(shape.containers) +
                                   " JSON arrays and objects in " + std::to_string(size) +
                                   " bytes, more than one per " + std::to_string(kTextBytesPerContainer) +
                                   " bytes (no file of ours is that dense)");
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
