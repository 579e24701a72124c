// The median a run's records and the benchmarks quote.
#pragma once

#include <algorithm>
#include <vector>

namespace shoal {

// The value at size / 2 once sorted (of an even count, the upper of the
// middle two); 0 for no values.
inline double Median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

}  // namespace shoal
