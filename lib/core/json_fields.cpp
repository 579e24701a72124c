#include "core/json_fields.h"

#include <cstdio>

#include "core/text.h"

namespace shoal {
namespace {

// The object whose fields are named "prefix.": the prefix less its dot.
std::string ObjectNamed(const std::string& prefix) {
  if (prefix.empty()) return "(top)";
  return prefix.back() == '.' ? prefix.substr(0, prefix.size() - 1) : prefix;
}

std::string Short(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

}  // namespace

Status JsonFields::Error(const std::string& field, const std::string& what) const {
  return Status::InvalidArgument("'" + file_ + "': field " + Quoted(field, 80) + " " + what);
}

Status JsonFields::Get(const nlohmann::json& obj, const std::string& prefix, const char* name,
                       const nlohmann::json** out) const {
  if (!obj.is_object()) return Error(ObjectNamed(prefix), "must be an object");
  auto it = obj.find(name);
  if (it == obj.end()) return Error(prefix + name, "is missing");
  *out = &*it;
  return Status::Ok();
}

Status JsonFields::String(const nlohmann::json& obj, const std::string& prefix, const char* name,
                          std::string* out, size_t max_bytes, size_t min_bytes) const {
  const nlohmann::json* v;
  SHOAL_RETURN_IF_ERROR(Get(obj, prefix, name, &v));
  if (!v->is_string() || v->get_ref<const std::string&>().size() < min_bytes ||
      v->get_ref<const std::string&>().size() > max_bytes)
    return Error(prefix + name, "must be a string of " + std::to_string(min_bytes) + ".." +
                                    std::to_string(max_bytes) + " bytes");
  *out = v->get<std::string>();
  return Status::Ok();
}

Status JsonFields::Unsigned(const nlohmann::json& obj, const std::string& prefix, const char* name,
                            uint64_t max, uint64_t* out) const {
  const nlohmann::json* v;
  SHOAL_RETURN_IF_ERROR(Get(obj, prefix, name, &v));
  return UnsignedAt(*v, prefix + name, max, out);
}

Status JsonFields::UnsignedAt(const nlohmann::json& v, const std::string& field, uint64_t max,
                              uint64_t* out) const {
  // A tree built in code holds non-negative integers as signed ones.
  const bool whole = v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
  if (!whole || v.get<uint64_t>() > max)
    return Error(field, "must be an integer in 0.." + std::to_string(max));
  *out = v.get<uint64_t>();
  return Status::Ok();
}

Status JsonFields::Int(const nlohmann::json& obj, const std::string& prefix, const char* name, int64_t min,
                       int64_t max, int64_t* out) const {
  const nlohmann::json* v;
  SHOAL_RETURN_IF_ERROR(Get(obj, prefix, name, &v));
  return IntAt(*v, prefix + name, min, max, out);
}

Status JsonFields::IntAt(const nlohmann::json& v, const std::string& field, int64_t min, int64_t max,
                         int64_t* out) const {
  const bool fits = (v.is_number_unsigned() && v.get<uint64_t>() <= static_cast<uint64_t>(max)) ||
                    (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() >= min &&
                     v.get<int64_t>() <= max);
  if (!fits) return Error(field, "must be an integer in " + std::to_string(min) + ".." + std::to_string(max));
  *out = v.get<int64_t>();
  return Status::Ok();
}

Status JsonFields::Number(const nlohmann::json& obj, const std::string& prefix, const char* name, double min,
                          double max, double* out) const {
  const nlohmann::json* v;
  SHOAL_RETURN_IF_ERROR(Get(obj, prefix, name, &v));
  if (!v->is_number() || !(v->get<double>() >= min && v->get<double>() <= max))
    return Error(prefix + name, "must be a number from " + Short(min) + " to " + Short(max));
  *out = v->get<double>();
  return Status::Ok();
}

Status JsonFields::Bool(const nlohmann::json& obj, const std::string& prefix, const char* name,
                        bool* out) const {
  const nlohmann::json* v;
  SHOAL_RETURN_IF_ERROR(Get(obj, prefix, name, &v));
  if (!v->is_boolean()) return Error(prefix + name, "must be true or false");
  *out = v->get<bool>();
  return Status::Ok();
}

Status JsonFields::List(const nlohmann::json& obj, const std::string& prefix, const char* name,
                        const nlohmann::json** out) const {
  SHOAL_RETURN_IF_ERROR(Get(obj, prefix, name, out));
  if (!(*out)->is_array()) return Error(prefix + name, "must be a list");
  return Status::Ok();
}

Status JsonFields::OnlyKnown(const nlohmann::json& obj, const std::string& prefix,
                             const char* const* known) const {
  if (!obj.is_object()) return Error(ObjectNamed(prefix), "must be an object");
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const char* const* k = known; *k && !ok; ++k) ok = it.key() == *k;
    if (!ok) return Error(prefix + it.key(), "is not a known field");
  }
  return Status::Ok();
}

}  // namespace shoal
