// Range nesting: hand-made cases, then properties on random ranges.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <random>

#include "storage/range_nesting.h"

using namespace ss;

TEST_CASE("nesting of hand-made ranges", "[storage][nesting]") {
  // 0:[0,100]  1:[10,40] inside 0  2:[20,30] inside 1  3:[50,60] inside 0  4:[200,210] top level
  // given out of order
  std::vector<std::pair<TimeNs, TimeNs>> in = {{50, 60}, {0, 100}, {20, 30}, {200, 210}, {10, 40}};
  auto r = nest_ranges(in);
  CHECK(r.nesting[1].depth == 0);
  CHECK(r.nesting[1].parent == -1);
  CHECK(r.nesting[4].depth == 1);
  CHECK(r.nesting[4].parent == 1);
  CHECK(r.nesting[2].depth == 2);
  CHECK(r.nesting[2].parent == 4);
  CHECK(r.nesting[0].depth == 1);
  CHECK(r.nesting[0].parent == 1);
  CHECK(r.nesting[3].depth == 0);
  CHECK(r.improper == 0);
  CHECK(r.order == std::vector<std::size_t>{1, 4, 2, 0, 3});
}

TEST_CASE("equal starts: the longer range encloses", "[storage][nesting]") {
  auto r = nest_ranges({{10, 20}, {10, 50}});
  CHECK(r.nesting[1].depth == 0);
  CHECK(r.nesting[0].depth == 1);
  CHECK(r.nesting[0].parent == 1);
}

TEST_CASE("an improperly nested range is counted and still gets its own depth", "[storage][nesting]") {
  auto r = nest_ranges({{0, 50}, {40, 80}, {60, 70}});
  CHECK(r.improper == 1);
  CHECK(r.nesting[1].depth == 1);
  // [60,70] starts after [0,50] ended, but [40,80] is still open on top of it.
  CHECK(r.nesting[2].depth == 2);
}

TEST_CASE("random ranges: each depth is free of overlaps and parents are open at the start", "[storage][nesting]") {
  std::mt19937_64 rng(GENERATE(11, 12, 13));
  std::vector<std::pair<TimeNs, TimeNs>> in;
  for (int i = 0; i < 2000; ++i) {
    TimeNs s = static_cast<TimeNs>(rng() % 100000);
    in.emplace_back(s, s + static_cast<TimeNs>(rng() % 2000));
  }
  auto r = nest_ranges(in);
  std::map<int, std::vector<std::pair<TimeNs, TimeNs>>> by_depth;
  for (std::size_t i = 0; i < in.size(); ++i) {
    by_depth[r.nesting[i].depth].push_back(in[i]);
    if (r.nesting[i].parent >= 0) {
      const auto& p = in[static_cast<std::size_t>(r.nesting[i].parent)];
      REQUIRE(p.first <= in[i].first);
      REQUIRE(p.second > in[i].first);
      REQUIRE(r.nesting[static_cast<std::size_t>(r.nesting[i].parent)].depth == r.nesting[i].depth - 1);
    } else {
      REQUIRE(r.nesting[i].depth == 0);
    }
  }
  for (auto& [d, v] : by_depth) {
    std::sort(v.begin(), v.end());
    for (std::size_t i = 1; i < v.size(); ++i) REQUIRE(v[i - 1].second <= v[i].first);
  }
}
