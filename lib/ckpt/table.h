// dl-ckpt's output for people: the same JSON its scripts read, laid out as
// aligned tables (arrays of records) and "key: value" lines (records).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace shoal {

std::string RenderTable(const nlohmann::json& result);

}  // namespace shoal
