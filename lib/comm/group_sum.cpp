#include "comm/group_sum.h"

#include <cstring>

namespace shoal {

void GroupSum::BeginStep(uint64_t step) {
  step_ = step;
  next_ = 0;
  status_ = Status::Ok();
}

// The channel carries floats: a double goes as the two floats of its bytes.
void GroupSum::Sum(std::vector<double>* values, const std::string& what) {
  if (!status_.ok()) return;
  const uint32_t tag = kFirstTag + next_++;
  const size_t floats = 2 * values->size();
  sent_.resize(floats);
  received_.resize(floats);
  std::memcpy(sent_.data(), values->data(), 4 * floats);
  const int size = static_cast<int>(channel_->group_size()), self = channel_->rank();
  for (int r = 0; r < size; ++r)
    if (r != self && !(status_ = channel_->Send(r, tag, step_, sent_.data(), floats)).ok()) return;
  std::vector<double> sum(values->size(), 0.0), peer(values->size());
  for (int r = 0; r < size; ++r) {
    const double* add = values->data();
    if (r != self) {
      if (!(status_ = channel_->Receive(r, tag, step_, received_.data(), floats, what)).ok()) return;
      std::memcpy(peer.data(), received_.data(), 4 * floats);
      add = peer.data();
    }
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += add[i];
  }
  *values = std::move(sum);
}

}  // namespace shoal
