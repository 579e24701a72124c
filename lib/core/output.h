// What every dl-* tool prints on standard output, through one printer:
// results and records as JSON for scripts (each with the build's commit), or,
// when a person watches a terminal (or asks with --table), the same as
// aligned tables and readable lines. Every write is checked: a tool whose
// output could not be written fails (status()). Logs go to standard error
// (core/log.h), never here.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace shoal {

// Whether standard output is a terminal: a person reads it.
bool StdoutIsTerminal();

// `j` with the build's commit added: to an object, or to each object of an array.
nlohmann::json WithCommit(nlohmann::json j);

// A person's view of a result: an object as "key: value" lines (its arrays
// of records as tables), an array of records as one table.
std::string RenderTable(const nlohmann::json& result);

class Output {
 public:
  // `table`: for a person; otherwise JSON. `out`: where (standard output).
  explicit Output(bool table, std::FILE* out = stdout) : table_(table), out_(out) {}
  // Every record (Record, Live) also goes to `copy` as a JSON line (a run's metrics file).
  void CopyTo(std::FILE* copy) { copy_ = copy; }

  // A command's result, a document: indented JSON, or a table.
  void Result(const nlohmann::json& result);
  // An event (an evaluation, the end of a run): one JSON line, or one
  // line "event  key value  key value ..." for a person.
  void Record(const nlohmann::json& record);
  // A document written by the program itself (plan.json, a profile), as it is.
  void Text(const std::string& text) { Write(out_, text); }
  // A progress record: a JSON line, or for a person `line`, rewritten in place.
  void Live(const nlohmann::json& record, const std::string& line);

  // Ok while every write has reached its file.
  Status status() const { return status_; }

 private:
  void Write(std::FILE* f, const std::string& text);
  void Copy(const nlohmann::json& record);

  bool table_;
  std::FILE* out_;
  std::FILE* copy_ = nullptr;
  bool line_open_ = false;
  Status status_;
};

}  // namespace shoal
