// Unions of time intervals (storage/interval_union.h): the union joins overlapping and touching
// intervals; the difference of an interval and a union is what the union leaves of it, checked
// against a nanosecond-by-nanosecond count on random inputs.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "storage/interval_union.h"

using ss::TimeInterval;
using ss::TimeNs;

TEST_CASE("interval union and difference, by hand", "[storage][intervals]") {
  const std::vector<TimeInterval> u = ss::interval_union({{50, 60}, {10, 20}, {15, 30}, {30, 35}});
  CHECK(u == std::vector<TimeInterval>{{10, 35}, {50, 60}});
  CHECK(ss::interval_difference({0, 100}, u) == std::vector<TimeInterval>{{0, 10}, {35, 50}, {60, 100}});
  CHECK(ss::interval_difference({12, 34}, u).empty());  // inside one
  CHECK(ss::interval_difference({20, 55}, u) == std::vector<TimeInterval>{{35, 50}});
  CHECK(ss::interval_difference({36, 49}, u) == std::vector<TimeInterval>{{36, 49}});  // between two
  CHECK(ss::interval_difference({5, 80}, {}) == std::vector<TimeInterval>{{5, 80}});
}

TEST_CASE("interval difference leaves exactly the instants no interval covers", "[storage][intervals]") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<TimeNs> at(0, 200), len(0, 30);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<TimeInterval> raw;
    for (int i = 0, n = trial % 8; i < n; ++i) {
      const TimeNs a = at(rng);
      raw.emplace_back(a, a + len(rng));
    }
    const std::vector<TimeInterval> u = ss::interval_union(raw);
    const TimeNs a = at(rng), b = a + 2 * len(rng);
    const std::vector<TimeInterval> d = ss::interval_difference({a, b}, u);
    // Each unit [t, t + 1) of [a, b): in the difference exactly when no interval covers it.
    for (TimeNs t = a; t < b; ++t) {
      bool covered = false, left = false;
      for (const auto& iv : raw) covered |= iv.first <= t && t + 1 <= iv.second;
      for (const auto& iv : d) left |= iv.first <= t && t + 1 <= iv.second;
      CHECK(covered != left);
    }
    for (std::size_t i = 0; i < d.size(); ++i) {  // sorted, disjoint, non-empty, inside [a, b]
      CHECK(d[i].first < d[i].second);
      CHECK(d[i].first >= a);
      CHECK(d[i].second <= b);
      if (i > 0) CHECK(d[i - 1].second < d[i].first);
    }
  }
}
