#include "ckpt/table.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace shoal {
namespace {

using nlohmann::json;

// A cell: numbers to 6 significant digits, a metric as its accuracy, null as "-".
std::string Cell(const json& v) {
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v.get<double>());
    return buf;
  }
  if (v.is_object() && v.contains("test_accuracy")) {
    std::string s = "acc " + Cell(v["test_accuracy"]);
    if (v.contains("step")) s += " @" + Cell(v["step"]);
    return s;
  }
  if (v.is_array() && std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_primitive(); })) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : v.size() > 4 ? "," : " ") + Cell(x);
    return s.empty() ? "-" : s;
  }
  return v.dump();
}

bool IsTableOfRecords(const json& v) {
  return v.is_array() && !v.empty() && std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_object(); });
}

bool HasNestedRecords(const json& record) {
  for (const auto& [k, v] : record.items())
    if (IsTableOfRecords(v)) return true;
  return false;
}

std::string Table(const json& rows) {
  std::vector<std::string> columns;
  for (const auto& row : rows)
    for (const auto& [k, v] : row.items())
      if (std::find(columns.begin(), columns.end(), k) == columns.end()) columns.push_back(k);
  std::vector<std::vector<std::string>> cells(1, columns);
  for (const auto& row : rows) {
    cells.emplace_back();
    for (const auto& c : columns) cells.back().push_back(row.contains(c) ? Cell(row[c]) : "");
  }
  std::vector<size_t> width(columns.size(), 0);
  for (const auto& r : cells)
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  std::string out;
  for (const auto& r : cells) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) line += r[i] + std::string(i + 1 < r.size() ? width[i] - r[i].size() + 2 : 0, ' ');
    out += line + "\n";
  }
  return out;
}

std::string Record(const json& record) {
  std::string out, nested;
  for (const auto& [k, v] : record.items()) {
    if (IsTableOfRecords(v)) nested += "\n" + k + ":\n" + Table(v);
    else out += k + ": " + Cell(v) + "\n";
  }
  return out + nested;
}

}  // namespace

std::string RenderTable(const json& result) {
  if (result.is_object()) return Record(result);
  if (IsTableOfRecords(result)) {
    if (std::none_of(result.begin(), result.end(), HasNestedRecords)) return Table(result);
    std::string out;
    for (const auto& r : result) out += (out.empty() ? "" : "\n") + Record(r);
    return out;
  }
  return Cell(result) + "\n";
}

}  // namespace shoal
