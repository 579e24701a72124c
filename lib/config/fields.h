// Typed, located access to one mapping of a document (lib/config/document.h):
// a job file's section or layer, a cluster profile. Every error names where
// the value came from (file:line:column, or the override) and the field;
// fields nobody asked for are reported as unknown, so a typo never passes
// silently. Every field read is also kept, typed, with its default when it
// was left out: resolved() is the mapping as the program understood it.
#pragma once

#include <climits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/choices.h"
#include "config/document.h"
#include "core/status.h"

namespace shoal {

// Typed reads of one mapping's fields, each error naming where the value was written.
class Fields {
 public:
  // `node` (which must outlive this) is the value at `pointer` of a document
  // from `origin`; `what` names it in messages, e.g. "layer 'fc1'".
  Fields(const nlohmann::json& node, std::shared_ptr<const Origin> origin, std::string pointer,
         std::string what);

  bool Has(const std::string& key) const;
  // Each reader below returns InvalidArgument, naming the place and the
  // field, for a value of another type or out of range; a field left out
  // takes the default. *out may hold the refused value, or part of a list.
  // Integers: a whole number within [min_value, max_value] (1e3 is 1000).
  Status Int(const std::string& key, int default_value, int* out, int min_value = 0,
             int max_value = INT_MAX) const;
  // Int's errors, and InvalidArgument for a field left out.
  Status RequiredInt(const std::string& key, int* out, int min_value = 1, int max_value = INT_MAX) const;
  Status Float(const std::string& key, double default_value, double* out, double min_value,
               double max_value) const;
  Status String(const std::string& key, const std::string& default_value, std::string* out) const;
  Status Bool(const std::string& key, bool default_value, bool* out) const;
  // At most `max_items` integers, each within [min_value, max_value].
  Status IntList(const std::string& key, std::vector<int>* out, int min_value = INT_MIN,
                 int max_value = INT_MAX, size_t max_items = 64) const;
  // Between `min_items` and `max_items` numbers, each within [min_value, max_value].
  Status FloatList(const std::string& key, std::vector<double>* out, double min_value, double max_value,
                   size_t min_items, size_t max_items) const;
  // A name or a list of names.
  Status StringList(const std::string& key, std::vector<std::string>* out) const;
  // A string that must be one of `choices`.
  Status Choice(const std::string& key, const std::string& default_value,
                const std::vector<std::string>& choices, std::string* out) const;
  // One of an enum's names (config/choices.h), as its value.
  template <typename E>
  Status Choice(const std::string& key, E default_value, E* out) const {
    std::string name;
    SHOAL_RETURN_IF_ERROR(Choice(key, Name(default_value), Names<E>(), &name));
    ParseName(name, out);
    return Status::Ok();
  }
  // The mapping under `key` (which must be one), named `what` in messages.
  // InvalidArgument where it is missing or not a mapping; *out is set only on success.
  Status Section(const std::string& key, const std::string& what, std::unique_ptr<Fields>* out) const;
  // The list under `key`; each item is read with Item. InvalidArgument where
  // it is missing or not a list.
  Status List(const std::string& key, const nlohmann::json** out) const;
  // Item `index` of List(key), as a mapping named `what`.
  Fields Item(const std::string& key, size_t index, const std::string& what) const;

  // Refuses every key that no accessor has asked for: InvalidArgument naming
  // the first such key.
  Status CheckNoUnknown() const;

  std::string Where() const;
  std::string Where(const std::string& key) const;
  const std::string& what() const { return what_; }
  const std::string& source() const { return origin_->source(); }
  const nlohmann::json& node() const { return node_; }
  // An error located at the mapping itself (for checks that span fields).
  Status Error(const std::string& message) const;
  Status FieldError(const std::string& key, const std::string& message) const;

  // Every field read so far, typed, defaults included; a Section's resolved
  // mapping is stored by Keep.
  const nlohmann::json& resolved() const { return resolved_; }
  void Keep(const std::string& key, nlohmann::json value) const { resolved_[key] = std::move(value); }

 private:
  const nlohmann::json* Value(const std::string& key) const;
  std::string PointerOf(const std::string& key) const;
  // The value as a number, or an error naming the field as not one.
  Status Number(const std::string& key, double* out) const;
  // IntList's and FloatList's reader: `kind` names the items in messages;
  // `whole` refuses a fraction.
  Status NumberList(const std::string& key, const std::string& kind, bool whole, double min_value,
                    double max_value, size_t min_items, size_t max_items, std::vector<double>* out) const;

  const nlohmann::json& node_;
  std::shared_ptr<const Origin> origin_;
  std::string pointer_;
  std::string what_;
  mutable std::vector<std::string> asked_;
  mutable nlohmann::json resolved_ = nlohmann::json::object();
};

}  // namespace shoal
