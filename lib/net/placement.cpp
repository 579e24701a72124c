#include "net/placement.h"

#include <algorithm>
#include <cstring>

namespace shoal {

bool Placement::operator==(const Placement& o) const {
  if (kind != o.kind) return false;
  if (kind == Kind::kOne) return rank == o.rank;
  if (kind != Kind::kColumns) return true;
  if (columns.size() != o.columns.size()) return false;
  for (size_t r = 0; r < columns.size(); ++r)
    if (columns[r].begin != o.columns[r].begin || columns[r].end != o.columns[r].end) return false;
  return true;
}

std::string Placement::ToString() const {
  switch (kind) {
    case Kind::kRows:
      return "rows";
    case Kind::kColumns:
      return "columns";
    case Kind::kOne:
      return "rank " + std::to_string(rank);
    case Kind::kReplicated:
      return "replicated";
  }
  return "?";
}

Block BlockAt(const Placement& p, int rank, int group_size, int batch, size_t floats) {
  const Range all_records{0, static_cast<size_t>(group_size) * batch}, all_floats{0, floats};
  switch (p.kind) {
    case Placement::Kind::kRows:
      return {{static_cast<size_t>(rank) * batch, static_cast<size_t>(rank + 1) * batch}, all_floats};
    case Placement::Kind::kColumns:
      return {all_records, p.columns[rank]};
    case Placement::Kind::kOne:
      return rank == p.rank ? Block{all_records, all_floats} : Block{};
    case Placement::Kind::kReplicated:
      return {all_records, all_floats};
  }
  return {};
}

Block Intersect(const Block& a, const Block& b) {
  auto cut = [](const Range& x, const Range& y) {
    Range r{std::max(x.begin, y.begin), std::min(x.end, y.end)};
    return r.begin < r.end ? r : Range{};
  };
  Block c{cut(a.records, b.records), cut(a.floats, b.floats)};
  return c.empty() ? Block{} : c;
}

Shape ShapeAt(const Placement& p, int rank, const Shape& full) {
  return p.kind == Placement::Kind::kColumns ? p.shapes[rank] : full;
}

Placement SplitColumns(const Shape& full, int group_size) {
  std::vector<Shape> shapes;
  for (int r = 0; r < group_size; ++r) {
    Shape s = full;
    s[0] = static_cast<int>(SplitRange(full[0], group_size, r).size());
    shapes.push_back(s);
  }
  return ColumnsOf(shapes);
}

Placement ColumnsOf(const std::vector<Shape>& shapes) {
  Placement p;
  p.kind = Placement::Kind::kColumns;
  p.shapes = shapes;
  size_t begin = 0;
  for (const Shape& s : shapes) {
    p.columns.push_back({begin, begin + NumElements(s)});
    begin += NumElements(s);
  }
  return p;
}

void PackBlock(const float* buffer, const Block& from, const Block& b, float* packed) {
  const size_t stride = from.floats.size(), width = b.floats.size();
  for (size_t rec = b.records.begin; rec < b.records.end; ++rec) {
    const float* row = buffer + (rec - from.records.begin) * stride + (b.floats.begin - from.floats.begin);
    std::memcpy(packed, row, 4 * width);
    packed += width;
  }
}

void UnpackBlock(const float* packed, const Block& b, const Block& into, float* buffer, bool add) {
  const size_t stride = into.floats.size(), width = b.floats.size();
  for (size_t rec = b.records.begin; rec < b.records.end; ++rec) {
    float* row = buffer + (rec - into.records.begin) * stride + (b.floats.begin - into.floats.begin);
    if (add)
      for (size_t f = 0; f < width; ++f) row[f] += packed[f];
    else
      std::memcpy(row, packed, 4 * width);
    packed += width;
  }
}

}  // namespace shoal
