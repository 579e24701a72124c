// Typed, located access to one YAML mapping of a job file. Every error names
// the file, line and column and the field; fields nobody asked for are
// reported as unknown, so a typo never passes silently.
#pragma once

#include <yaml-cpp/yaml.h>

#include <set>
#include <string>
#include <vector>

#include "core/status.h"

namespace shoal {

// "file:line:column" of a node (yaml-cpp counts from 0; people count from 1).
std::string NodeWhere(const std::string& source, const YAML::Node& node);

class Fields {
 public:
  // `what` names the mapping in messages, e.g. "layer 'fc1'" or "section 'train'".
  Fields(YAML::Node node, std::string source, std::string what);

  bool Has(const std::string& key) const;
  Status Int(const std::string& key, int default_value, int* out, int min_value = 0) const;
  Status RequiredInt(const std::string& key, int* out, int min_value = 1) const;
  Status Float(const std::string& key, double default_value, double* out, double min_value,
               double max_value) const;
  Status String(const std::string& key, const std::string& default_value, std::string* out) const;
  Status Bool(const std::string& key, bool default_value, bool* out) const;
  Status IntList(const std::string& key, std::vector<int>* out) const;
  Status StringList(const std::string& key, std::vector<std::string>* out) const;
  // A string that must be one of `choices`.
  Status Choice(const std::string& key, const std::string& default_value,
                const std::vector<std::string>& choices, std::string* out) const;

  // Refuses every key that no accessor has asked for.
  Status CheckNoUnknown() const;

  std::string Where() const { return NodeWhere(source_, node_); }
  std::string Where(const std::string& key) const;
  const std::string& what() const { return what_; }
  const std::string& source() const { return source_; }
  // An error located at the mapping itself (for checks that span fields).
  Status Error(const std::string& message) const;
  Status FieldError(const std::string& key, const std::string& message) const;

 private:
  YAML::Node node_;
  std::string source_;
  std::string what_;
  mutable std::set<std::string> asked_;
};

}  // namespace shoal
