#include "config/fields.h"

namespace shoal {

std::string NodeWhere(const std::string& source, const YAML::Node& node) {
  YAML::Mark mark = node.Mark();
  if (mark.line < 0) return source;  // a node made by an override has no position
  return source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

Fields::Fields(YAML::Node node, std::string source, std::string what)
    : node_(std::move(node)), source_(std::move(source)), what_(std::move(what)) {}

bool Fields::Has(const std::string& key) const {
  asked_.insert(key);
  return node_[key].IsDefined() && !node_[key].IsNull();
}

std::string Fields::Where(const std::string& key) const {
  YAML::Node v = node_[key];
  return v.IsDefined() ? NodeWhere(source_, v) : Where();
}

Status Fields::Error(const std::string& message) const {
  return Status::InvalidArgument(Where() + ": " + what_ + ": " + message);
}

Status Fields::FieldError(const std::string& key, const std::string& message) const {
  return Status::InvalidArgument(Where(key) + ": " + what_ + ": field '" + key + "' " + message);
}

Status Fields::Int(const std::string& key, int default_value, int* out, int min_value) const {
  if (!Has(key)) {
    *out = default_value;
    return Status::Ok();
  }
  try {
    *out = node_[key].as<int>();
  } catch (const YAML::Exception&) {
    return FieldError(key, "must be an integer");
  }
  if (*out < min_value)
    return FieldError(key, "must be at least " + std::to_string(min_value) + ", got " +
                               std::to_string(*out));
  return Status::Ok();
}

Status Fields::RequiredInt(const std::string& key, int* out, int min_value) const {
  if (!Has(key)) return Error("missing field '" + key + "'");
  return Int(key, 0, out, min_value);
}

Status Fields::Float(const std::string& key, double default_value, double* out, double min_value,
                     double max_value) const {
  if (!Has(key)) {
    *out = default_value;
    return Status::Ok();
  }
  try {
    *out = node_[key].as<double>();
  } catch (const YAML::Exception&) {
    return FieldError(key, "must be a number");
  }
  if (!(*out >= min_value && *out <= max_value))
    return FieldError(key, "must be in [" + std::to_string(min_value) + ", " +
                               std::to_string(max_value) + "], got " + std::to_string(*out));
  return Status::Ok();
}

Status Fields::String(const std::string& key, const std::string& default_value,
                      std::string* out) const {
  if (!Has(key)) {
    *out = default_value;
    return Status::Ok();
  }
  if (!node_[key].IsScalar()) return FieldError(key, "must be a string");
  *out = node_[key].Scalar();
  return Status::Ok();
}

Status Fields::Bool(const std::string& key, bool default_value, bool* out) const {
  if (!Has(key)) {
    *out = default_value;
    return Status::Ok();
  }
  try {
    *out = node_[key].as<bool>();
  } catch (const YAML::Exception&) {
    return FieldError(key, "must be true or false");
  }
  return Status::Ok();
}

Status Fields::IntList(const std::string& key, std::vector<int>* out) const {
  out->clear();
  if (!Has(key)) return Status::Ok();
  YAML::Node list = node_[key];
  if (!list.IsSequence()) return FieldError(key, "must be a list of integers");
  for (const auto& item : list) {
    try {
      out->push_back(item.as<int>());
    } catch (const YAML::Exception&) {
      return Status::InvalidArgument(NodeWhere(source_, item) + ": " + what_ + ": field '" + key +
                                     "' must be a list of integers");
    }
  }
  return Status::Ok();
}

Status Fields::StringList(const std::string& key, std::vector<std::string>* out) const {
  out->clear();
  if (!Has(key)) return Status::Ok();
  YAML::Node list = node_[key];
  if (list.IsScalar()) {
    out->push_back(list.Scalar());
    return Status::Ok();
  }
  if (!list.IsSequence()) return FieldError(key, "must be a list of names");
  for (const auto& item : list) {
    if (!item.IsScalar())
      return Status::InvalidArgument(NodeWhere(source_, item) + ": " + what_ + ": field '" + key +
                                     "' must be a list of names");
    out->push_back(item.Scalar());
  }
  return Status::Ok();
}

Status Fields::Choice(const std::string& key, const std::string& default_value,
                      const std::vector<std::string>& choices, std::string* out) const {
  SHOAL_RETURN_IF_ERROR(String(key, default_value, out));
  for (const auto& c : choices)
    if (c == *out) return Status::Ok();
  std::string known;
  for (const auto& c : choices) known += (known.empty() ? "" : ", ") + c;
  return FieldError(key, "is '" + *out + "', expected one of: " + known);
}

Status Fields::CheckNoUnknown() const {
  if (!node_.IsMap()) return Status::Ok();
  for (const auto& kv : node_) {
    std::string key = kv.first.Scalar();
    if (!asked_.count(key))
      return Status::InvalidArgument(NodeWhere(source_, kv.first) + ": " + what_ +
                                     ": unknown field '" + key + "'");
  }
  return Status::Ok();
}

}  // namespace shoal
