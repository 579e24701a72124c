#include "ps/elastic.h"

#include <cstddef>

namespace shoal {

void ElasticExchange(float alpha, std::vector<float>* x_then_diff, std::vector<float>* centre) {
  std::vector<float>& d = *x_then_diff;
  std::vector<float>& c = *centre;
  for (size_t i = 0; i < d.size(); ++i) {
    d[i] = alpha * (d[i] - c[i]);
    c[i] += d[i];
  }
}

}  // namespace shoal
