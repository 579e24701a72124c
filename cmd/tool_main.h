// What every dl-* main shares: CLI11 with shoal's exit codes (help exits 0,
// every usage error exits 2, whatever CLI11's own code), and a last guard:
// memory that runs out, or an exception some library let escape, ends the
// tool with a one-line error and exit 1, never with abort()'s signal.
#pragma once

#include <CLI/CLI.hpp>
#include <exception>
#include <map>
#include <new>
#include <string>

#include "config/choices.h"
#include "core/exit_codes.h"
#include "core/text.h"

#define SHOAL_PARSE_COMMAND_LINE(app, argc, argv)                                 \
  try {                                                                           \
    (app).parse((argc), (argv));                                                  \
  } catch (const CLI::ParseError& parse_error) {                                  \
    return (app).exit(parse_error) == 0 ? ::shoal::kExitOk : ::shoal::kExitUsage; \
  }

namespace shoal {

// Checks an option's value against an enum's names (config/choices.h) and
// stores the enum: app.add_option("--strategy", strategy)->transform(ChoiceOf<Strategy>()).
template <typename E>
CLI::CheckedTransformer ChoiceOf() {
  std::map<std::string, E> by_name;
  for (const auto& row : ChoiceTable<E>::rows) by_name[row.name] = RowValue(row);
  return CLI::CheckedTransformer(by_name);
}

// An option's number above zero (strictly) or from zero, with a message
// that says so; CLI11's PositiveNumber quotes the largest double instead.
inline CLI::Validator NumberFromZero(bool strictly) {
  const std::string bound = strictly ? "more than 0" : "0 or more";
  return CLI::Validator(
      [strictly, bound](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value)) return "'" + text + "' is not a number";
        const bool ok = strictly ? value > 0 : value >= 0;
        return ok ? "" : "must be " + bound + ", not " + text;
      },
      strictly ? "POSITIVE" : "NONNEGATIVE");
}
inline CLI::Validator Positive() { return NumberFromZero(true); }
inline CLI::Validator NotNegative() { return NumberFromZero(false); }

template <typename Main>
int GuardedMain(Main body, int argc, char** argv) {
  try {
    return body(argc, argv);
  } catch (const std::bad_alloc&) {
    return ReportFailure(Status::IOError("out of memory"));
  } catch (const std::exception& e) {
    return ReportFailure(Status::IOError(std::string("unexpected: ") + Quoted(e.what(), 200)));
  }
}

}  // namespace shoal
