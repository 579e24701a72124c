#include "core/output.h"

#include <unistd.h>

#include <algorithm>
#include <vector>

#include "core/build_info.h"
#include "core/json_text.h"

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
  return JsonText(v);
}

bool IsTableOfRecords(const json& v) {
  return v.is_array() && !v.empty() &&
         std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_object(); });
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
    for (size_t i = 0; i < r.size(); ++i)
      line += r[i] + std::string(i + 1 < r.size() ? width[i] - r[i].size() + 2 : 0, ' ');
    out += line + "\n";
  }
  return out;
}

std::string RecordLines(const json& record) {
  std::string out, nested;
  for (const auto& [k, v] : record.items()) {
    if (IsTableOfRecords(v))
      nested += "\n" + k + ":\n" + Table(v);
    else
      out += k + ": " + Cell(v) + "\n";
  }
  return out + nested;
}

}  // namespace

std::string RenderTable(const json& result) {
  if (result.is_object()) return RecordLines(result);
  if (IsTableOfRecords(result)) {
    if (std::none_of(result.begin(), result.end(), HasNestedRecords)) return Table(result);
    std::string out;
    for (const auto& r : result) out += (out.empty() ? "" : "\n") + RecordLines(r);
    return out;
  }
  return Cell(result) + "\n";
}

bool StdoutIsTerminal() { return isatty(STDOUT_FILENO); }

json WithCommit(json j) {
  if (j.is_object()) j["commit"] = BuildCommit();
  if (j.is_array())
    for (auto& item : j)
      if (item.is_object()) item["commit"] = BuildCommit();
  return j;
}

void Output::Write(std::FILE* f, const std::string& text) {
  if (std::fputs(text.c_str(), f) < 0 || std::fflush(f) != 0)
    if (status_.ok())
      status_ =
          Status::IOError(f == out_ ? "cannot write to standard output" : "cannot write the metrics file");
}

void Output::Copy(const json& record) {
  if (copy_) Write(copy_, JsonText(WithCommit(record)) + "\n");
}

void Output::Result(const json& result) {
  Write(out_, table_ ? RenderTable(result) : JsonText(WithCommit(result), 2) + "\n");
}

void Output::Record(const json& r) {
  Copy(r);
  if (!table_) return Write(out_, JsonText(WithCommit(r)) + "\n");
  if (line_open_) Write(out_, "\n");
  line_open_ = false;
  // "done  steps 120  test_accuracy 0.8612  ..." on one line.
  std::string line = r.value("event", "event");
  for (const auto& [key, value] : r.items()) {
    if (key == "event") continue;
    line += "  " + key + " " +
            (value.is_number_float() ? Cell(value)
             : value.is_string()     ? value.get<std::string>()
                                     : JsonText(value));
  }
  Write(out_, line + "\n");
}

void Output::Live(const json& record, const std::string& line) {
  Copy(record);
  if (!table_) return Write(out_, JsonText(WithCommit(record)) + "\n");
  Write(out_, "\r\033[K" + line);
  line_open_ = true;
}

}  // namespace shoal
