// Typed reads of the fields of untrusted JSON (a manifest, a checkpoint's
// header): each checks the field is there, of its type and in its range, and
// an error names the file and the field ("'x.ckpt': field 'tensors[3].count'
// must be an integer in 0..1024"). Parse the text with ParseJson first.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace shoal {

class JsonFields {
 public:
  // `file` names the source in messages.
  explicit JsonFields(std::string file) : file_(std::move(file)) {}
  Status Error(const std::string& field, const std::string& what) const;
  // `prefix` places the object's fields ("tensors[3]." , or "" at the top).
  Status Get(const nlohmann::json& obj, const std::string& prefix, const char* name,
             const nlohmann::json** out) const;
  // A string of min_bytes..max_bytes bytes.
  Status String(const nlohmann::json& obj, const std::string& prefix, const char* name, std::string* out,
                size_t max_bytes = 4096, size_t min_bytes = 1) const;
  Status Unsigned(const nlohmann::json& obj, const std::string& prefix, const char* name, uint64_t max,
                  uint64_t* out) const;
  Status Int(const nlohmann::json& obj, const std::string& prefix, const char* name, int64_t min, int64_t max,
             int64_t* out) const;
  // A finite number in [min, max].
  Status Number(const nlohmann::json& obj, const std::string& prefix, const char* name, double min,
                double max, double* out) const;
  Status Bool(const nlohmann::json& obj, const std::string& prefix, const char* name, bool* out) const;
  // A list; read its items with the *At readers.
  Status List(const nlohmann::json& obj, const std::string& prefix, const char* name,
              const nlohmann::json** out) const;
  // The same checks of a value that is no object's field (a list's item), named `field`.
  Status UnsignedAt(const nlohmann::json& v, const std::string& field, uint64_t max, uint64_t* out) const;
  Status IntAt(const nlohmann::json& v, const std::string& field, int64_t min, int64_t max,
               int64_t* out) const;
  // Refuses a field not in `known` (a null-terminated list).
  Status OnlyKnown(const nlohmann::json& obj, const std::string& prefix, const char* const* known) const;

 private:
  std::string file_;
};

}  // namespace shoal
