// Command-line parsing shared by the dl-* mains: CLI11 with shoal's exit
// codes (help exits 0, every usage error exits 2, whatever CLI11's own code).
#pragma once

#include <CLI/CLI.hpp>

#include "core/exit_codes.h"

#define SHOAL_PARSE_COMMAND_LINE(app, argc, argv)             \
  try {                                                       \
    (app).parse((argc), (argv));                              \
  } catch (const CLI::ParseError& parse_error) {              \
    return (app).exit(parse_error) == 0 ? ::shoal::kExitOk    \
                                        : ::shoal::kExitUsage; \
  }
