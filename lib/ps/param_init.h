// Initial parameter values, the same whichever server or how many servers
// hold them: each parameter has its own generator, seeded by its name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "layers/layer.h"
#include "plan/plan.h"

namespace shoal {

// The whole parameter `name` of `shape`, by `init`, for the job's `seed`.
void InitializeParam(const std::string& name, const Shape& shape, const ParamInit& init, uint64_t seed,
                     std::vector<float>* values);
inline void InitializeParam(const ParamPlan& param, uint64_t seed, std::vector<float>* values) {
  InitializeParam(param.name, param.shape, param.init, seed, values);
}

// InitializeParam, or for a parameter whose layer has init_from, the
// checkpoint's values (lib/graph/param_fields.h); errors name the parameter.
// Returns InvalidArgument when that checkpoint cannot be loaded or lacks the
// parameter at its shape; *values is unchanged then.
Status InitialValues(const std::string& name, const Shape& shape, const ParamInit& init, uint64_t seed,
                     std::vector<float>* values);

}  // namespace shoal
