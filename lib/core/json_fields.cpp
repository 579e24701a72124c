#include "core/json_fields.h"

#include "core/text.h"

namespace shoal {

Status JsonFields::Error(const std::string& field, const std::string& what) const {
  return Status::InvalidArgument("'" + file_ + "': field " + Quoted(field, 80) + " " + what);
}

Status JsonFields::Get(const nlohmann::json& obj, const std::string& prefix, const char* name,
                       const nlohmann::json** out) const {
  if (!obj.is_object()) return Error(prefix.empty() ? "(top)" : prefix, "must be an object");
  auto it = obj.find(name);
  if (it == obj.end()) return Error(prefix + name, "is missing");
  *out = &*it;
  return Status::Ok();
}

Status JsonFields::String(const nlohmann::json& obj, const std::string& prefix, const char* name,
                          std::string* out, size_t max_bytes) const {
  const nlohmann::json* v;
  SHOAL_RETURN_IF_ERROR(Get(obj, prefix, name, &v));
  if (!v->is_string() || v->get_ref<const std::string&>().empty() ||
      v->get_ref<const std::string&>().size() > max_bytes)
    return Error(prefix + name, "must be a string of 1.." + std::to_string(max_bytes) + " bytes");
  *out = v->get<std::string>();
  return Status::Ok();
}

Status JsonFields::Unsigned(const nlohmann::json& obj, const std::string& prefix, const char* name,
                            uint64_t max, uint64_t* out) const {
  const nlohmann::json* v;
  SHOAL_RETURN_IF_ERROR(Get(obj, prefix, name, &v));
  if (!v->is_number_unsigned() || v->get<uint64_t>() > max)
    return Error(prefix + name, "must be an integer in 0.." + std::to_string(max));
  *out = v->get<uint64_t>();
  return Status::Ok();
}

Status JsonFields::Int(const nlohmann::json& obj, const std::string& prefix, const char* name, int64_t min,
                       int64_t max, int64_t* out) const {
  const nlohmann::json* v;
  SHOAL_RETURN_IF_ERROR(Get(obj, prefix, name, &v));
  const bool fits = (v->is_number_unsigned() && v->get<uint64_t>() <= static_cast<uint64_t>(max)) ||
                    (v->is_number_integer() && !v->is_number_unsigned() && v->get<int64_t>() >= min &&
                     v->get<int64_t>() <= max);
  if (!fits)
    return Error(prefix + name, "must be an integer in " + std::to_string(min) + ".." + std::to_string(max));
  *out = v->get<int64_t>();
  return Status::Ok();
}

Status JsonFields::OnlyKnown(const nlohmann::json& obj, const std::string& prefix,
                             const char* const* known) const {
  if (!obj.is_object()) return Error(prefix.empty() ? "(top)" : prefix, "must be an object");
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const char* const* k = known; *k && !ok; ++k) ok = it.key() == *k;
    if (!ok) return Error(prefix + it.key(), "is not a known field");
  }
  return Status::Ok();
}

}  // namespace shoal
