// plan.json as every process loads it: as given (the hash stops most
// changes), then with its hash recomputed, as anyone who edits a plan can, so
// the checks behind the hash are reached.
#include <string>

#include "core/hash.h"
#include "core/json_text.h"
#include "plan/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  nlohmann::json j;
  if (!ParseJson(std::string(reinterpret_cast<const char*>(data), size), "plan.json", &j).ok()) return 0;
  Plan plan;
  (void)PlanFromJson(j, "plan.json", &plan);
  if (!j.is_object()) return 0;
  j.erase("hash");
  j["hash"] = HexU64(Fnv1a64(JsonText(j)));
  (void)PlanFromJson(j, "plan.json", &plan);
  return 0;
}
