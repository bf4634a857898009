// Interval arithmetic used by every built-in analysis.
#include <catch2/catch.hpp>

#include "plugins/builtin/common/intervals.h"

using namespace ss::analysis;

namespace {
bool same(const IntervalSet& a, const IntervalSet& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].start != b[i].start || a[i].end != b[i].end) return false;
  return true;
}
}  // namespace

TEST_CASE("merge, clip, intersect, subtract, covered length and gaps", "[plugins][intervals]") {
  // [0,10) and [5,20) touch-merge into [0,20); [20,25) is adjacent and joins; [30,30) is empty.
  const IntervalSet a = merge({{5, 20}, {0, 10}, {20, 25}, {30, 30}, {40, 50}});
  CHECK(same(a, {{0, 25}, {40, 50}}));
  CHECK(total_length(a) == 35);
  CHECK(same(clip(a, 10, 45), {{10, 25}, {40, 45}}));
  const IntervalSet b = merge({{20, 42}, {48, 60}});
  CHECK(same(intersect(a, b), {{20, 25}, {40, 42}, {48, 50}}));
  CHECK(same(subtract(a, b), {{0, 20}, {42, 48}}));
  CHECK(same(subtract(b, a), {{25, 40}, {50, 60}}));
  // [15,45) meets a in [15,25) (10) and [40,45) (5).
  CHECK(covered_length(a, {15, 45}) == 15);
  CHECK(covered_length(a, {25, 40}) == 0);
  CHECK(same(gaps(a, -5, 55), {{-5, 0}, {25, 40}, {50, 55}}));
  CHECK(subtract({}, a).empty());
  CHECK(same(subtract(a, {}), a));
}
