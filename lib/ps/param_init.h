// Initial parameter values, the same whichever server or how many servers
// hold them: each parameter has its own generator, seeded by its name.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/plan.h"

namespace shoal {

void InitializeParam(const ParamPlan& param, uint64_t seed, std::vector<float>* values);

}  // namespace shoal
