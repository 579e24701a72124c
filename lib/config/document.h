// The one reader of YAML (job files, overrides, cluster profiles): text in,
// a JSON tree out, with where every key and value came from. Everything
// after it — Fields, the job, plans — works on the tree, so a job travels
// on as JSON (plan.json) and nothing but dl-plan parses YAML.
//
// The reader is a boundary for untrusted bytes: it bounds the text, the
// nodes, the nesting and each scalar before it builds anything, refuses
// duplicate keys, anchors and aliases, and bytes that are not UTF-8, and turns
// every exception of the YAML library into a Status naming file:line:column.
// Scalars stay text in the tree (Fields gives them their type when asked),
// so "1.0" read as a name is still "1.0".
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace shoal {

// Where the values of one document came from, by JSON pointer.
class Origin {
 public:
  explicit Origin(std::string source) : source_(std::move(source)) {}
  // The file (or "plan.json (job)") that messages name.
  const std::string& source() const { return source_; }
  // "file:line:column" of the value at `pointer`, or of its key with
  // `key` set; a value without a recorded place (a document read from JSON)
  // is named by the source and the pointer.
  std::string Where(const std::string& pointer, bool key = false) const;
  void Set(const std::string& pointer, bool key, std::string where);
  // Forgets the places of `pointer` and everything under it (an override replaced it).
  void Forget(const std::string& pointer);

 private:
  std::string source_;
  std::map<std::string, std::string> where_;  // pointer (+ "#key" for keys) -> place
};

struct Document {
  nlohmann::json root;
  std::shared_ptr<Origin> origin;
};

// The limits of the reader; docs/job-file.md lists them.
inline constexpr size_t kMaxYamlBytes = 4u << 20;
inline constexpr size_t kMaxYamlNodes = 200000;
inline constexpr int kMaxYamlDepth = 64;
inline constexpr size_t kMaxScalarBytes = 64u << 10;

// `key` as one token of a JSON pointer (RFC 6901: "~" is "~0", "/" is "~1").
std::string PointerToken(const std::string& key);

// Parses one YAML document. `source` names it in messages. InvalidArgument,
// naming file:line:column where it can, for text the reader refuses; *doc
// then holds a null root.
Status ParseYaml(const std::string& text, const std::string& source, Document* doc);
// A document of JSON already parsed (the job inside a plan): no line numbers.
Document JsonDocument(nlohmann::json root, const std::string& source);
// Applies "section.field=value" (the value is YAML: 7, [1, 2], {a: b}) to
// the tree, creating mappings on the way; the new values are placed at
// "--set 'section.field=value'" in messages. InvalidArgument for an
// assignment not of that form, a value ParseYaml refuses, or a key on the way
// that is not a section; sections made on the way may stay in *doc then.
Status ApplyOverride(const std::string& assignment, Document* doc);

}  // namespace shoal
