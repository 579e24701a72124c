#include "config/document.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <sstream>
#include <vector>

#include "core/text.h"

namespace shoal {
namespace {

using nlohmann::json;

std::string Place(const std::string& source, const YAML::Mark& mark) {
  if (mark.line < 0) return source;
  return source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

// Builds the tree from the parser's events. Every node is counted before it
// is made and every scalar checked, so a hostile file costs what its limits
// allow and no more. The first fault wins; the rest of the events are ignored.
// Where a second document starts, if the text has one.
class SecondDocument : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { mark_ = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
  }
  void OnMapEnd() override {}
  const YAML::Mark& mark() const { return mark_; }

 private:
  YAML::Mark mark_;
};

class TreeBuilder : public YAML::EventHandler {
 public:
  TreeBuilder(std::string source, Origin* origin) : source_(std::move(source)), origin_(origin) {}

  const Status& status() const { return status_; }
  json& root() { return root_; }
  bool has_root() const { return has_root_; }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { Add(mark, anchor, nullptr, true); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
    Fail(mark, "anchors and aliases are not supported");
  }
  void OnAnchor(const YAML::Mark& mark, const std::string&) override {
    Fail(mark, "anchors and aliases are not supported");
  }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    if (!status_.ok()) return;
    if (value.size() > kMaxScalarBytes)
      return Fail(mark, "a value of " + std::to_string(value.size()) + " bytes (at most " +
                            std::to_string(kMaxScalarBytes) + ")");
    if (!IsUtf8(value)) return Fail(mark, "not valid UTF-8: " + Quoted(value));
    // A plain ~ or null is YAML's null; everything else stays text.
    const bool null = tag == "?" && (value == "~" || value == "null" || value == "Null" || value == "NULL");
    Add(mark, anchor, null ? json(nullptr) : json(value), true);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, anchor, json::array());
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, anchor, json::object());
  }
  void OnMapEnd() override {
    if (status_.ok() && !stack_.empty() && stack_.back().key_pending)
      return Fail(stack_.back().mark, "a key without a value");
    Close();
  }

 private:
  struct Frame {
    json* node;
    std::string pointer;
    YAML::Mark mark;
    bool key_pending = false;  // maps: the next scalar is a key
    std::string key;
    YAML::Mark key_mark;
  };

  void Fail(const YAML::Mark& mark, const std::string& why) {
    if (status_.ok()) status_ = Status::InvalidArgument(Place(source_, mark) + ": " + why);
  }

  // Where a new value goes, or null after a fault (a key that is not a
  // plain scalar, too many nodes, too deep).
  json* Slot(const YAML::Mark& mark, const json& value, bool scalar, std::string* pointer) {
    if (!status_.ok()) return nullptr;
    if (++nodes_ > kMaxYamlNodes) {
      Fail(mark, "more than " + std::to_string(kMaxYamlNodes) + " values");
      return nullptr;
    }
    if (stack_.empty()) {
      if (has_root_) {
        Fail(mark, "a second document (one per file)");
        return nullptr;
      }
      has_root_ = true;
      *pointer = "";
      return &root_;
    }
    Frame& top = stack_.back();
    if (top.node->is_array()) {
      *pointer = top.pointer + "/" + std::to_string(top.node->size());
      top.node->push_back(nullptr);
      return &top.node->back();
    }
    if (!top.key_pending) {  // a key
      if (!scalar || !value.is_string()) {
        Fail(mark, "a key must be a plain name");
        return nullptr;
      }
      const std::string key = value.get<std::string>();
      if (top.node->contains(key)) {
        Fail(mark, "key '" + key + "' appears twice in this mapping");
        return nullptr;
      }
      top.key = key;
      top.key_mark = mark;
      top.key_pending = true;
      return nullptr;
    }
    top.key_pending = false;
    *pointer = top.pointer + "/" + PointerToken(top.key);
    origin_->Set(*pointer, true, Place(source_, top.key_mark));
    return &(*top.node)[top.key];
  }

  void Add(const YAML::Mark& mark, YAML::anchor_t anchor, json value, bool scalar) {
    if (anchor != YAML::NullAnchor) return Fail(mark, "anchors and aliases are not supported");
    std::string pointer;
    json* slot = Slot(mark, value, scalar, &pointer);
    if (!slot) return;
    *slot = std::move(value);
    origin_->Set(pointer, false, Place(source_, mark));
  }

  void Open(const YAML::Mark& mark, YAML::anchor_t anchor, json empty) {
    if (anchor != YAML::NullAnchor) return Fail(mark, "anchors and aliases are not supported");
    if (static_cast<int>(stack_.size()) >= kMaxYamlDepth)
      return Fail(mark, "nested deeper than " + std::to_string(kMaxYamlDepth) + " levels");
    std::string pointer;
    json* slot = Slot(mark, empty, false, &pointer);
    if (!slot) {
      ++ignored_;  // its Close must not pop a frame of ours
      return;
    }
    *slot = std::move(empty);
    origin_->Set(pointer, false, Place(source_, mark));
    stack_.push_back({slot, pointer, mark, false, {}, {}});
  }

  void Close() {
    if (ignored_ > 0) {
      --ignored_;
      return;
    }
    if (!stack_.empty()) stack_.pop_back();
  }

  std::string source_;
  Origin* origin_;
  Status status_;
  json root_;
  bool has_root_ = false;
  size_t nodes_ = 0;
  int ignored_ = 0;
  std::vector<Frame> stack_;
};

}  // namespace

std::string PointerToken(const std::string& key) {
  std::string out;
  for (char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

std::string Origin::Where(const std::string& pointer, bool key) const {
  auto it = where_.find(key ? pointer + "#key" : pointer);
  if (it != where_.end()) return it->second;
  // A value inside an override's is placed at the override.
  for (std::string up = pointer; !up.empty();) {
    up.erase(up.rfind('/'));
    it = where_.find(up);
    if (it != where_.end()) return it->second;
  }
  return pointer.empty() ? source_ : source_ + " at " + pointer;
}

void Origin::Set(const std::string& pointer, bool key, std::string where) {
  where_[key ? pointer + "#key" : pointer] = std::move(where);
}

void Origin::Forget(const std::string& pointer) {
  for (auto it = where_.lower_bound(pointer);
       it != where_.end() && it->first.compare(0, pointer.size(), pointer) == 0;) {
    const char next = it->first.size() > pointer.size() ? it->first[pointer.size()] : '\0';
    if (next == '\0' || next == '/' || next == '#')
      it = where_.erase(it);
    else
      ++it;
  }
}

Status ParseYaml(const std::string& text, const std::string& source, Document* doc) {
  *doc = Document{json(), std::make_shared<Origin>(source)};
  if (text.size() > kMaxYamlBytes)
    return Status::InvalidArgument(source + ": " + std::to_string(text.size()) +
                                   " bytes; a YAML file here is at most " + std::to_string(kMaxYamlBytes));
  TreeBuilder builder(source, doc->origin.get());
  std::istringstream in(text);
  try {
    YAML::Parser parser(in);
    // One document, and never a loop over them: on a stray token (",")
    // yaml-cpp 0.7 returns empty documents forever (its issue 1040).
    SecondDocument second;
    if (parser.HandleNextDocument(builder) && builder.status().ok() && parser.HandleNextDocument(second))
      return Status::InvalidArgument(
          Place(source, second.mark()) +
          ": malformed YAML: a second document or a stray token; this must be one document");
  } catch (const YAML::Exception& e) {
    // The parser's word first: events before a syntax error can look like
    // anything (a fault of the handler's is often its symptom).
    return Status::InvalidArgument(Place(source, e.mark) + ": malformed YAML: " + e.msg);
  } catch (const std::exception& e) {  // bad_alloc and the like: the library's, not ours
    return Status::InvalidArgument(source + ": cannot read YAML: " + e.what());
  }
  SHOAL_RETURN_IF_ERROR(builder.status());
  doc->root = builder.has_root() ? std::move(builder.root()) : json(nullptr);
  return Status::Ok();
}

Document JsonDocument(json root, const std::string& source) {
  return Document{std::move(root), std::make_shared<Origin>(source)};
}

Status ApplyOverride(const std::string& assignment, Document* doc) {
  const std::string named = "override " + Quoted(assignment);
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    return Status::InvalidArgument(named + " is not of the form section.field=value");
  const std::string path = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  std::vector<std::string> keys;
  std::stringstream ss(path);
  for (std::string key; std::getline(ss, key, '.');) {
    if (key.empty()) return Status::InvalidArgument(named + " has an empty field name");
    keys.push_back(key);
  }
  if (path.back() == '.') return Status::InvalidArgument(named + " has an empty field name");
  Document value;
  SHOAL_RETURN_IF_ERROR(ParseYaml(text, "--set " + Quoted(assignment), &value));
  if (!doc->root.is_object()) doc->root = json::object();
  auto named_by_override = [&](const std::string& at) {
    doc->origin->Set(at, true, "--set " + Quoted(assignment));
    doc->origin->Set(at, false, "--set " + Quoted(assignment));
  };
  json* node = &doc->root;
  std::string pointer;
  for (size_t i = 0; i + 1 < keys.size(); ++i) {
    pointer += "/" + PointerToken(keys[i]);
    json& next = (*node)[keys[i]];
    if (next.is_null()) {  // a section the override makes: named by it too
      next = json::object();
      named_by_override(pointer);
    }
    if (!next.is_object()) return Status::InvalidArgument(named + ": '" + keys[i] + "' is not a section");
    node = &next;
  }
  pointer += "/" + PointerToken(keys.back());
  (*node)[keys.back()] = std::move(value.root);
  // Every value it set is named by the override, not by a line of the file.
  doc->origin->Forget(pointer);
  named_by_override(pointer);
  return Status::Ok();
}

}  // namespace shoal
