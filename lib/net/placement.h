// Where a feature (records × floats per record) lives within a group of M
// workers, each taking `batch` records of the group's M·batch (SINGA §5.3):
//  - rows:       each rank holds its own records, whole (data parallelism);
//  - columns:    each rank holds a range of every record's floats (model parallelism);
//  - one:        one rank holds everything (an unpartitioned layer);
//  - replicated: every rank holds everything (what a model-parallel layer reads).
// Moving a feature between two placements is moving, for every pair of
// ranks, the intersection of what one holds and the other needs.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "plan/partition.h"
#include "tensor/tensor.h"

namespace shoal {

struct Placement {
  enum class Kind { kRows, kColumns, kOne, kReplicated };
  Kind kind = Kind::kRows;
  int rank = 0;                // kOne: the rank that holds it
  std::vector<Range> columns;  // kColumns: per rank, which floats of a record
  std::vector<Shape> shapes;   // kColumns: per rank, the shape of those floats

  bool operator==(const Placement& o) const;
  bool operator!=(const Placement& o) const { return !(*this == o); }
  std::string ToString() const;
};

// A rectangle of a feature: records × floats of a record.
struct Block {
  Range records, floats;
  bool empty() const { return records.empty() || floats.empty(); }
  size_t size() const { return records.size() * floats.size(); }
};

// What rank `rank` holds of a feature of `floats` floats per record placed
// as `p`, in a group of `group_size` workers with `batch` records each.
Block BlockAt(const Placement& p, int rank, int group_size, int batch, size_t floats);
Block Intersect(const Block& a, const Block& b);

// The per-record shape rank `rank` holds (`full`: the whole record's).
Shape ShapeAt(const Placement& p, int rank, const Shape& full);

// Columns split over the first dimension of `full` (channels, units).
Placement SplitColumns(const Shape& full, int group_size);
// Columns from each rank's shape, laid side by side in rank order.
Placement ColumnsOf(const std::vector<Shape>& shapes);

// Copies block `b` between a buffer holding block `from` (row-major:
// records × floats) and a packed buffer of b.size() floats.
void PackBlock(const float* buffer, const Block& from, const Block& b, float* packed);
// Adds (`add`) or copies the packed block into a buffer holding block `into`.
void UnpackBlock(const float* packed, const Block& b, const Block& into, float* buffer, bool add);

}  // namespace shoal
