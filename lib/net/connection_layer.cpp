#include "net/connection_layer.h"

namespace shoal {

ConnectionLayer::ConnectionLayer(GroupChannel* channel, int index, const std::string& source,
                                 const std::string& consumer, Placement held, Placement needed,
                                 const Shape& full_shape, bool source_wants_grad)
    : channel_(channel),
      index_(index),
      rank_(channel->rank()),
      group_size_(static_cast<int>(channel->group_size())),
      source_(source),
      consumer_(consumer),
      held_(std::move(held)),
      needed_(std::move(needed)),
      floats_(NumElements(full_shape)),
      source_wants_grad_(source_wants_grad) {
  Init(source + "->" + consumer, "connection");
  out_shape_ = ShapeAt(needed_, rank_, full_shape);
}

Block ConnectionLayer::HeldBy(int rank) const { return BlockAt(held_, rank, group_size_, batch_, floats_); }
Block ConnectionLayer::NeededBy(int rank) const {
  return BlockAt(needed_, rank, group_size_, batch_, floats_);
}

void ConnectionLayer::Forward(Phase, const std::vector<Layer*>& srcs) {
  status_ = Status::Ok();
  const uint32_t tag = 2 * index_;
  const Block mine = HeldBy(rank_), wanted = NeededBy(rank_);
  for (int q = 0; q < group_size_ && status_.ok(); ++q) {
    const Block b = Intersect(mine, NeededBy(q));
    if (q == rank_ || b.empty()) continue;
    packed_.resize(b.size());
    PackBlock(srcs[0]->data().data(), mine, b, packed_.data());
    status_ = channel_->Send(q, tag, step_, packed_.data(), b.size());
  }
  const Block own = Intersect(mine, wanted);
  if (!own.empty()) {
    packed_.resize(own.size());
    PackBlock(srcs[0]->data().data(), mine, own, packed_.data());
    UnpackBlock(packed_.data(), own, wanted, data_.data(), false);
  }
  for (int p = 0; p < group_size_ && status_.ok(); ++p) {
    const Block b = Intersect(HeldBy(p), wanted);
    if (p == rank_ || b.empty()) continue;
    packed_.resize(b.size());
    status_ =
        channel_->Receive(p, tag, step_, packed_.data(), b.size(), "features of layer '" + source_ + "'");
    if (!status_.ok()) return;
    UnpackBlock(packed_.data(), b, wanted, data_.data(), false);
    bytes_in_ += 4ull * b.size();
  }
}

void ConnectionLayer::Backward(const std::vector<Layer*>& srcs) {
  status_ = Status::Ok();
  if (!source_wants_grad_) return;
  const uint32_t tag = 2 * index_ + 1;
  const Block mine = HeldBy(rank_), wanted = NeededBy(rank_);
  for (int p = 0; p < group_size_ && status_.ok(); ++p) {
    const Block b = Intersect(HeldBy(p), wanted);
    if (p == rank_ || b.empty()) continue;
    packed_.resize(b.size());
    PackBlock(grad_.data(), wanted, b, packed_.data());
    status_ = channel_->Send(p, tag, step_, packed_.data(), b.size());
    bytes_out_ += 4ull * b.size();
  }
  const Block own = Intersect(mine, wanted);
  if (!own.empty()) {
    packed_.resize(own.size());
    PackBlock(grad_.data(), wanted, own, packed_.data());
    UnpackBlock(packed_.data(), own, mine, srcs[0]->grad().data(), true);
  }
  for (int q = 0; q < group_size_ && status_.ok(); ++q) {
    const Block b = Intersect(mine, NeededBy(q));
    if (q == rank_ || b.empty()) continue;
    packed_.resize(b.size());
    status_ = channel_->Receive(q, tag, step_, packed_.data(), b.size(),
                                "gradients of layer '" + source_ + "' from layer '" + consumer_ + "'");
    if (status_.ok()) UnpackBlock(packed_.data(), b, mine, srcs[0]->grad().data(), true);
  }
}

std::string ConnectionLayer::Describe() const {
  // SINGA's names: a bridge moves a whole feature between two workers, a
  // slice only cuts what a worker holds, a concat assembles from several.
  int sources = 0;
  bool local_only = true;
  for (int p = 0; p < group_size_; ++p)
    for (int q = 0; q < group_size_; ++q)
      if (p != q && !Intersect(HeldBy(p), NeededBy(q)).empty()) {
        local_only = false;
        if (q == rank_) ++sources;
      }
  const char* kind =
      local_only ? "slice"
      : (held_.kind == Placement::Kind::kOne || needed_.kind == Placement::Kind::kOne) && sources <= 1
          ? "bridge"
          : "concat";
  return std::string(kind) + ": " + source_ + " (" + held_.ToString() + ") -> " + consumer_ + " (" +
         needed_.ToString() + ")";
}

}  // namespace shoal
