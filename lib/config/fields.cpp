#include "config/fields.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/text.h"

namespace shoal {
namespace {

using nlohmann::json;

// A scalar's text: strings as they are, numbers and booleans as JSON writes them.
bool ScalarText(const json& v, std::string* text) {
  if (v.is_string())
    *text = v.get<std::string>();
  else if (v.is_number() || v.is_boolean())
    *text = v.dump();
  else
    return false;
  return true;
}

// The whole of `text` as a finite number (YAML's and JSON's forms: 5, -2.5, 1e12).
bool ParseNumber(const std::string& text, double* out) {
  if (text.empty() || text.size() > 64 || std::isspace(static_cast<unsigned char>(text[0]))) return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

// A bound as a message shows it: integers whole, others in a few digits.
std::string Short(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.10g", x);
  return text;
}

// How many items a list takes, for a message.
std::string ItemCount(size_t min_items, size_t max_items) {
  if (min_items == 0) return "at most " + std::to_string(max_items);
  if (min_items == max_items) return "it takes " + std::to_string(min_items);
  return "it takes " + std::to_string(min_items) + " to " + std::to_string(max_items);
}

}  // namespace

Fields::Fields(const json& node, std::shared_ptr<const Origin> origin, std::string pointer, std::string what)
    : node_(node), origin_(std::move(origin)), pointer_(std::move(pointer)), what_(std::move(what)) {}

const json* Fields::Value(const std::string& key) const {
  if (!node_.is_object()) return nullptr;
  auto it = node_.find(key);
  return it == node_.end() || it->is_null() ? nullptr : &*it;
}

std::string Fields::PointerOf(const std::string& key) const { return pointer_ + "/" + PointerToken(key); }

bool Fields::Has(const std::string& key) const {
  if (std::find(asked_.begin(), asked_.end(), key) == asked_.end()) asked_.push_back(key);
  return Value(key) != nullptr;
}

std::string Fields::Where() const { return origin_->Where(pointer_); }

std::string Fields::Where(const std::string& key) const {
  return node_.is_object() && node_.contains(key) ? origin_->Where(PointerOf(key)) : Where();
}

Status Fields::Error(const std::string& message) const {
  return Status::InvalidArgument(Where() + ": " + what_ + ": " + message);
}

Status Fields::FieldError(const std::string& key, const std::string& message) const {
  return Status::InvalidArgument(Where(key) + ": " + what_ + ": field '" + key + "' " + message);
}

Status Fields::Number(const std::string& key, double* out) const {
  const json& v = *Value(key);
  if (v.is_number()) {
    *out = v.get<double>();
    return Status::Ok();
  }
  std::string text;
  if (v.is_string() && ScalarText(v, &text) && ParseNumber(text, out)) return Status::Ok();
  return Status::InvalidArgument("");  // the caller names the type it wanted
}

Status Fields::Int(const std::string& key, int default_value, int* out, int min_value, int max_value) const {
  if (!Has(key)) {
    *out = default_value;
    Keep(key, *out);
    return Status::Ok();
  }
  double v = 0;
  std::string text;
  ScalarText(*Value(key), &text);
  if (!Number(key, &v).ok() || v != std::floor(v))
    return FieldError(key, "must be an integer" + (text.empty() ? "" : ", got " + Quoted(text, 40)));
  if (v < min_value)
    return FieldError(key, "must be at least " + std::to_string(min_value) + ", got " + text);
  if (v > max_value) return FieldError(key, "must be at most " + std::to_string(max_value) + ", got " + text);
  *out = static_cast<int>(v);
  Keep(key, *out);
  return Status::Ok();
}

Status Fields::RequiredInt(const std::string& key, int* out, int min_value, int max_value) const {
  if (!Has(key)) return Error("missing field '" + key + "'");
  return Int(key, 0, out, min_value, max_value);
}

Status Fields::Float(const std::string& key, double default_value, double* out, double min_value,
                     double max_value) const {
  if (!Has(key)) {
    *out = default_value;
    Keep(key, *out);
    return Status::Ok();
  }
  if (!Number(key, out).ok()) return FieldError(key, "must be a number");
  if (!(*out >= min_value && *out <= max_value))
    return FieldError(key, "must be in [" + std::to_string(min_value) + ", " + std::to_string(max_value) +
                               "], got " + std::to_string(*out));
  Keep(key, *out);
  return Status::Ok();
}

Status Fields::String(const std::string& key, const std::string& default_value, std::string* out) const {
  if (!Has(key)) {
    *out = default_value;
    Keep(key, *out);
    return Status::Ok();
  }
  if (!ScalarText(*Value(key), out)) return FieldError(key, "must be a string");
  Keep(key, *out);
  return Status::Ok();
}

Status Fields::Bool(const std::string& key, bool default_value, bool* out) const {
  if (!Has(key)) {
    *out = default_value;
    Keep(key, *out);
    return Status::Ok();
  }
  const json& v = *Value(key);
  std::string text;
  if (v.is_boolean()) {
    *out = v.get<bool>();
  } else if (v.is_string() && ScalarText(v, &text)) {
    // YAML's words for them, in the three spellings it allows.
    static const char* const kTrue[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
    static const char* const kFalse[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"};
    const auto is = [&](const char* const* words) {
      return std::any_of(words, words + 9, [&](const char* w) { return text == w; });
    };
    if (is(kTrue))
      *out = true;
    else if (is(kFalse))
      *out = false;
    else
      return FieldError(key, "must be true or false");
  } else {
    return FieldError(key, "must be true or false");
  }
  Keep(key, *out);
  return Status::Ok();
}

Status Fields::IntList(const std::string& key, std::vector<int>* out, int min_value, int max_value,
                       size_t max_items) const {
  std::vector<double> values;
  SHOAL_RETURN_IF_ERROR(NumberList(key, "integers", true, min_value, max_value, 0, max_items, &values));
  out->assign(values.begin(), values.end());
  if (Has(key)) Keep(key, *out);
  return Status::Ok();
}

Status Fields::FloatList(const std::string& key, std::vector<double>* out, double min_value, double max_value,
                         size_t min_items, size_t max_items) const {
  SHOAL_RETURN_IF_ERROR(NumberList(key, "numbers", false, min_value, max_value, min_items, max_items, out));
  if (Has(key)) Keep(key, *out);
  return Status::Ok();
}

Status Fields::NumberList(const std::string& key, const std::string& kind, bool whole, double min_value,
                          double max_value, size_t min_items, size_t max_items,
                          std::vector<double>* out) const {
  out->clear();
  if (!Has(key)) return Status::Ok();
  const json& list = *Value(key);
  if (!list.is_array()) return FieldError(key, "must be a list of " + kind);
  if (list.size() < min_items || list.size() > max_items)
    return FieldError(key,
                      "has " + std::to_string(list.size()) + " items, " + ItemCount(min_items, max_items));
  const std::string item_error = what_ + ": field '" + key + "' must be a list of " + kind;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = origin_->Where(PointerOf(key) + "/" + std::to_string(i));
    double v = 0;
    std::string text;
    const bool number = list[i].is_number() ? (v = list[i].get<double>(), true)
                                            : ScalarText(list[i], &text) && ParseNumber(text, &v);
    if (!number || (whole && v != std::floor(v))) return Status::InvalidArgument(where + ": " + item_error);
    if (v < min_value || v > max_value)
      return Status::InvalidArgument(where + ": " + what_ + ": field '" + key + "' holds " +
                                     (text.empty() ? list[i].dump() : text) + ", outside [" +
                                     Short(min_value) + ", " + Short(max_value) + "]");
    out->push_back(v);
  }
  return Status::Ok();
}

Status Fields::StringList(const std::string& key, std::vector<std::string>* out) const {
  out->clear();
  if (!Has(key)) {
    Keep(key, json::array());
    return Status::Ok();
  }
  const json& list = *Value(key);
  std::string text;
  if (ScalarText(list, &text)) {
    out->push_back(text);
  } else if (!list.is_array()) {
    return FieldError(key, "must be a list of names");
  } else {
    for (size_t i = 0; i < list.size(); ++i) {
      if (!ScalarText(list[i], &text))
        return Status::InvalidArgument(origin_->Where(PointerOf(key) + "/" + std::to_string(i)) + ": " +
                                       what_ + ": field '" + key + "' must be a list of names");
      out->push_back(text);
    }
  }
  Keep(key, *out);
  return Status::Ok();
}

Status Fields::Choice(const std::string& key, const std::string& default_value,
                      const std::vector<std::string>& choices, std::string* out) const {
  SHOAL_RETURN_IF_ERROR(String(key, default_value, out));
  for (const auto& c : choices)
    if (c == *out) return Status::Ok();
  std::string known;
  for (const auto& c : choices) known += (known.empty() ? "" : ", ") + c;
  return FieldError(key, "is " + Quoted(*out, 60) + ", expected one of: " + known);
}

Status Fields::Section(const std::string& key, const std::string& what, std::unique_ptr<Fields>* out) const {
  Has(key);
  const json* v = Value(key);
  if (!v || !v->is_object()) return Status::InvalidArgument(Where(key) + ": " + what + " must be a mapping");
  *out = std::make_unique<Fields>(*v, origin_, PointerOf(key), what);
  return Status::Ok();
}

Status Fields::List(const std::string& key, const json** out) const {
  Has(key);
  *out = Value(key);
  if (!*out || !(*out)->is_array()) return FieldError(key, "must be a list");
  return Status::Ok();
}

Fields Fields::Item(const std::string& key, size_t index, const std::string& what) const {
  return Fields(node_.at(key).at(index), origin_, PointerOf(key) + "/" + std::to_string(index), what);
}

Status Fields::CheckNoUnknown() const {
  if (!node_.is_object()) return Status::Ok();
  for (const auto& [key, value] : node_.items()) {
    if (std::find(asked_.begin(), asked_.end(), key) != asked_.end()) continue;
    return Status::InvalidArgument(origin_->Where(PointerOf(key), true) + ": " + what_ + ": unknown field " +
                                   Quoted(key, 60));
  }
  return Status::Ok();
}

}  // namespace shoal
