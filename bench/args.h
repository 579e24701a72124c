// The positional arguments of bench/'s programs. Each is a whole number in a
// range, or the program names the argument, says what it takes, and exits 2.
#pragma once

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace shoal::bench {

// argv[index] as a whole number within [min, max], or `fallback` where the
// command line stops before it. `name` is what the usage line calls it.
inline long long NumberArg(int argc, char** argv, int index, const char* name, long long fallback,
                           long long min, long long max) {
  if (index >= argc) return fallback;
  const char* text = argv[index];
  const char* end = text + std::strlen(text);
  long long value = 0;
  const auto [stop, error] = std::from_chars(text, end, value);
  if (error != std::errc() || stop != end || value < min || value > max) {
    std::fprintf(stderr, "%s: %s must be a whole number from %lld to %lld, not '%s'\n", argv[0], name, min,
                 max, text);
    std::exit(2);
  }
  return value;
}

// The same, for an int.
inline int IntArg(int argc, char** argv, int index, const char* name, int fallback, int min, int max) {
  return static_cast<int>(NumberArg(argc, argv, index, name, fallback, min, max));
}

}  // namespace shoal::bench
