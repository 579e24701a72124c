// Elastic averaging SGD's exchange (Zhang, Choromanska and LeCun, "Deep
// learning with Elastic Averaging SGD", 2015; DeepSpark's equation 1): a
// worker's parameters x and the centre c are pulled toward each other by the
// elastic difference d = alpha·(x − c): the centre takes c + d, the worker
// x − d. alpha is the moving rate, in (0, 1).
#pragma once

#include <vector>

namespace shoal {

// The centre's side: `x_then_diff` holds the worker's x and receives d;
// `centre` receives c + d. Both hold the same number of floats.
void ElasticExchange(float alpha, std::vector<float>* x_then_diff, std::vector<float>* centre);

}  // namespace shoal
