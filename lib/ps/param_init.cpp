#include "ps/param_init.h"

#include <random>

#include "core/hash.h"
#include "graph/param_fields.h"

namespace shoal {

void InitializeParam(const std::string& name, const Shape& shape, const ParamInit& init, uint64_t seed,
                     std::vector<float>* values) {
  values->assign(NumElements(shape), init.value);
  if (init.kind != ParamInit::Kind::kUniform) return;
  // mt19937_64's output is fixed by the standard (its distributions are not):
  // map the top 24 bits to [0, 1) ourselves so every build agrees.
  std::mt19937_64 rng(Fnv1a64(name) ^ (seed * 0x9E3779B97F4A7C15ull));
  const float bound = init.value;
  for (float& v : *values) {
    float u = static_cast<float>(rng() >> 40) * (1.0f / 16777216.0f);
    v = (2.0f * u - 1.0f) * bound;
  }
}

Status InitialValues(const std::string& name, const Shape& shape, const ParamInit& init, uint64_t seed,
                     std::vector<float>* values) {
  if (init.kind == ParamInit::Kind::kCheckpoint) return LoadInitFrom(name, shape, init, values);
  InitializeParam(name, shape, init, seed, values);
  return Status::Ok();
}

}  // namespace shoal
