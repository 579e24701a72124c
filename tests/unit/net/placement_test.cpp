// Tests for lib/net/placement: where a feature (records × floats) lives in a
// group, the blocks each rank holds under rows, columns, one and replicated,
// and the packing that moves the intersection of two blocks.
#include "net/placement.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace shoal {
namespace {

Placement Rows() { return Placement(); }

Placement One(int rank) {
  Placement p;
  p.kind = Placement::Kind::kOne;
  p.rank = rank;
  return p;
}

Placement Replicated() {
  Placement p;
  p.kind = Placement::Kind::kReplicated;
  return p;
}

std::vector<size_t> Bounds(const Range& r) { return {r.begin, r.end}; }

// How many ranks hold each float of a feature of group_size·batch records
// of `floats` floats, placed as `p`.
std::vector<int> Coverage(const Placement& p, int group_size, int batch, size_t floats) {
  std::vector<int> held(static_cast<size_t>(group_size) * batch * floats, 0);
  for (int r = 0; r < group_size; ++r) {
    const Block b = BlockAt(p, r, group_size, batch, floats);
    for (size_t rec = b.records.begin; rec < b.records.end; ++rec)
      for (size_t f = b.floats.begin; f < b.floats.end; ++f) ++held.at(rec * floats + f);
  }
  return held;
}

TEST_CASE("SplitColumns cuts the first dimension into balanced ranges, the larger parts last") {
  // 5 units over 2 ranks: 2 and 3.
  Placement p = SplitColumns({5}, 2);
  CHECK(p.kind == Placement::Kind::kColumns);
  REQUIRE(p.columns.size() == 2);
  CHECK(Bounds(p.columns[0]) == std::vector<size_t>{0, 2});
  CHECK(Bounds(p.columns[1]) == std::vector<size_t>{2, 5});
  CHECK(p.shapes == std::vector<Shape>{{2}, {3}});

  // 7 channels of 2×3 over 3 ranks: 2, 2, 3 channels of 6 floats each.
  p = SplitColumns({7, 2, 3}, 3);
  REQUIRE(p.columns.size() == 3);
  CHECK(p.shapes == std::vector<Shape>{{2, 2, 3}, {2, 2, 3}, {3, 2, 3}});
  CHECK(Bounds(p.columns[0]) == std::vector<size_t>{0, 12});
  CHECK(Bounds(p.columns[1]) == std::vector<size_t>{12, 24});
  CHECK(Bounds(p.columns[2]) == std::vector<size_t>{24, 42});

  // Fewer units than ranks: some ranks hold none.
  p = SplitColumns({1}, 2);
  CHECK(p.shapes == std::vector<Shape>{{0}, {1}});
  CHECK(p.columns[0].empty());
  CHECK(Bounds(p.columns[1]) == std::vector<size_t>{0, 1});
}

TEST_CASE("ColumnsOf lays each rank's shape side by side in rank order") {
  Placement p = ColumnsOf({{3}, {1, 2}, {2, 2, 2}});
  CHECK(p.kind == Placement::Kind::kColumns);
  REQUIRE(p.columns.size() == 3);
  CHECK(Bounds(p.columns[0]) == std::vector<size_t>{0, 3});
  CHECK(Bounds(p.columns[1]) == std::vector<size_t>{3, 5});
  CHECK(Bounds(p.columns[2]) == std::vector<size_t>{5, 13});
  CHECK(p.shapes == std::vector<Shape>{{3}, {1, 2}, {2, 2, 2}});
}

TEST_CASE("ShapeAt gives a columns rank its own shape and every other placement the whole record's") {
  const Shape full{5, 2};
  const Placement columns = SplitColumns(full, 2);
  CHECK(ShapeAt(columns, 0, full) == Shape{2, 2});
  CHECK(ShapeAt(columns, 1, full) == Shape{3, 2});
  for (const Placement& p : {Rows(), One(1), Replicated()})
    for (int r = 0; r < 2; ++r) {
      INFO(p.ToString() << ", rank " << r);
      CHECK(ShapeAt(p, r, full) == full);
    }
}

TEST_CASE("BlockAt: rows hold their own records whole; columns every record's range; one all or nothing") {
  const int m = 3, batch = 4;
  const size_t floats = 5;
  // rows: rank 1 of 3 with batch 4 holds records 4..8, every float.
  Block b = BlockAt(Rows(), 1, m, batch, floats);
  CHECK(Bounds(b.records) == std::vector<size_t>{4, 8});
  CHECK(Bounds(b.floats) == std::vector<size_t>{0, 5});
  CHECK(b.size() == 20);
  CHECK(!b.empty());
  b = BlockAt(Rows(), 2, m, batch, floats);
  CHECK(Bounds(b.records) == std::vector<size_t>{8, 12});

  // columns: all 12 records, the rank's range of floats.
  const Placement columns = ColumnsOf({{1}, {3}, {1}});
  b = BlockAt(columns, 1, m, batch, floats);
  CHECK(Bounds(b.records) == std::vector<size_t>{0, 12});
  CHECK(Bounds(b.floats) == std::vector<size_t>{1, 4});
  CHECK(b.size() == 36);

  // one: rank 2 holds everything; the others nothing.
  b = BlockAt(One(2), 2, m, batch, floats);
  CHECK(Bounds(b.records) == std::vector<size_t>{0, 12});
  CHECK(Bounds(b.floats) == std::vector<size_t>{0, 5});
  for (int r : {0, 1}) {
    b = BlockAt(One(2), r, m, batch, floats);
    CHECK(b.empty());
    CHECK(b.size() == 0);
  }

  // replicated: everything everywhere.
  for (int r = 0; r < m; ++r) {
    b = BlockAt(Replicated(), r, m, batch, floats);
    CHECK(b.size() == 60);
  }
}

TEST_CASE("rows, columns and one cover every float exactly once; replicated once per rank") {
  const int m = 3, batch = 2;
  const size_t floats = 7;
  // Uneven column split 2, 2, 3 (SplitColumns of 7 units).
  for (const Placement& p : {Rows(), SplitColumns({7}, 3), One(0), One(2)}) {
    INFO(p.ToString());
    const std::vector<int> held = Coverage(p, m, batch, floats);
    for (size_t i = 0; i < held.size(); ++i) {
      INFO("float " << i);
      CHECK(held[i] == 1);
    }
  }
  const std::vector<int> held = Coverage(Replicated(), m, batch, floats);
  for (int h : held) CHECK(h == m);
}

TEST_CASE("Intersect keeps the common rectangle and gives an empty block when there is none") {
  const int m = 2, batch = 3;
  const Placement columns = SplitColumns({5}, 2);  // floats 0..2 and 2..5
  // Rank 1's rows against rank 0's columns: records 3..6, floats 0..2.
  Block c = Intersect(BlockAt(Rows(), 1, m, batch, 5), BlockAt(columns, 0, m, batch, 5));
  CHECK(Bounds(c.records) == std::vector<size_t>{3, 6});
  CHECK(Bounds(c.floats) == std::vector<size_t>{0, 2});
  CHECK(c.size() == 6);

  // Rank 0's rows and rank 1's rows share no record.
  c = Intersect(BlockAt(Rows(), 0, m, batch, 5), BlockAt(Rows(), 1, m, batch, 5));
  CHECK(c.empty());
  CHECK(c.records.empty());
  CHECK(c.floats.empty());
  CHECK(c.size() == 0);

  // Two column ranges that touch at one boundary share nothing.
  c = Intersect(BlockAt(columns, 0, m, batch, 5), BlockAt(columns, 1, m, batch, 5));
  CHECK(c.empty());

  // With nothing held (one, another rank), nothing in common.
  c = Intersect(BlockAt(One(1), 0, m, batch, 5), BlockAt(Replicated(), 0, m, batch, 5));
  CHECK(c.empty());
  // Replicated ∩ anything is that thing.
  c = Intersect(BlockAt(Replicated(), 0, m, batch, 5), BlockAt(columns, 1, m, batch, 5));
  CHECK(Bounds(c.records) == std::vector<size_t>{0, 6});
  CHECK(Bounds(c.floats) == std::vector<size_t>{2, 5});
}

TEST_CASE("placements compare by kind, by rank for one, and by column ranges for columns") {
  CHECK(Rows() == Rows());
  CHECK(Replicated() == Replicated());
  CHECK(Rows() != Replicated());
  CHECK(One(1) == One(1));
  CHECK(One(0) != One(1));
  CHECK(One(0) != Rows());
  CHECK(SplitColumns({5}, 2) == SplitColumns({5}, 2));
  CHECK(SplitColumns({5}, 2) != SplitColumns({6}, 2));
  CHECK(SplitColumns({6}, 2) != SplitColumns({6}, 3));
  CHECK(ColumnsOf({{2}, {3}}) != ColumnsOf({{3}, {2}}));
  CHECK(SplitColumns({5}, 2) != Rows());

  CHECK(Rows().ToString() == "rows");
  CHECK(SplitColumns({5}, 2).ToString() == "columns");
  CHECK(One(1).ToString() == "rank 1");
  CHECK(Replicated().ToString() == "replicated");
}

TEST_CASE("PackBlock copies a block out of a buffer holding a larger block, row by row") {
  // The buffer holds rank 1's rows of a 2×3-record, 5-float feature: records 3..6.
  const Block from{{3, 6}, {0, 5}};
  std::vector<float> buffer;
  for (int rec = 3; rec < 6; ++rec)
    for (int f = 0; f < 5; ++f) buffer.push_back(100.0f * rec + f);
  // Floats 2..5 of records 4..6.
  const Block b{{4, 6}, {2, 5}};
  std::vector<float> packed(b.size(), -1.0f);
  PackBlock(buffer.data(), from, b, packed.data());
  CHECK(packed == std::vector<float>{402, 403, 404, 502, 503, 504});
}

TEST_CASE("UnpackBlock copies or adds a packed block into a buffer holding a larger block") {
  // The buffer holds all 4 records × floats 1..4 (a columns rank).
  const Block into{{0, 4}, {1, 4}};
  std::vector<float> buffer(into.size(), 1.0f);
  const Block b{{2, 4}, {2, 4}};
  const std::vector<float> packed{10, 20, 30, 40};
  UnpackBlock(packed.data(), b, into, buffer.data(), false);
  CHECK(buffer == std::vector<float>{1, 1, 1, 1, 1, 1, 1, 10, 20, 1, 30, 40});
  UnpackBlock(packed.data(), b, into, buffer.data(), true);
  CHECK(buffer == std::vector<float>{1, 1, 1, 1, 1, 1, 1, 20, 40, 1, 60, 80});
}

// Moves a feature from placement `held` to `needed` the way a connection
// does — every rank p's block ∩ every rank q's need — and checks that each
// rank ends with exactly the floats it needs, each written once.
void CheckMove(const Placement& held, const Placement& needed, int m, int batch, size_t floats) {
  INFO(held.ToString() << " -> " << needed.ToString());
  auto value = [&](size_t rec, size_t f) { return static_cast<float>(1000 * rec + f); };
  std::vector<std::vector<float>> have(m), got(m);
  std::vector<std::vector<int>> writes(m);
  for (int r = 0; r < m; ++r) {
    const Block b = BlockAt(held, r, m, batch, floats);
    for (size_t rec = b.records.begin; rec < b.records.end; ++rec)
      for (size_t f = b.floats.begin; f < b.floats.end; ++f) have[r].push_back(value(rec, f));
    got[r].assign(BlockAt(needed, r, m, batch, floats).size(), -1.0f);
    writes[r].assign(got[r].size(), 0);
  }
  for (int p = 0; p < m; ++p)
    for (int q = 0; q < m; ++q) {
      const Block from = BlockAt(held, p, m, batch, floats), into = BlockAt(needed, q, m, batch, floats);
      const Block b = Intersect(from, into);
      if (b.empty()) continue;
      std::vector<float> packed(b.size());
      PackBlock(have[p].data(), from, b, packed.data());
      UnpackBlock(packed.data(), b, into, got[q].data(), false);
      std::vector<float> ones(b.size(), 1.0f), count(into.size(), 0.0f);
      UnpackBlock(ones.data(), b, into, count.data(), true);
      for (size_t i = 0; i < count.size(); ++i) writes[q][i] += static_cast<int>(count[i]);
    }
  for (int q = 0; q < m; ++q) {
    INFO("rank " << q);
    const Block into = BlockAt(needed, q, m, batch, floats);
    size_t i = 0;
    for (size_t rec = into.records.begin; rec < into.records.end; ++rec)
      for (size_t f = into.floats.begin; f < into.floats.end; ++f, ++i) {
        INFO("record " << rec << ", float " << f);
        CHECK(got[q][i] == value(rec, f));
        // Replicated sources write every float once per holder; others once.
        CHECK(writes[q][i] == (held.kind == Placement::Kind::kReplicated ? m : 1));
      }
    CHECK(i == got[q].size());
  }
}

TEST_CASE("moving a feature between any two placements delivers every needed float from its holders") {
  const int m = 3, batch = 2;
  const size_t floats = 7;
  const std::vector<Placement> all = {Rows(), SplitColumns({7}, 3), One(0), One(2), Replicated()};
  for (const Placement& held : all)
    for (const Placement& needed : all) CheckMove(held, needed, m, batch, floats);
}

}  // namespace
}  // namespace shoal
