#include "plugins/builtin/common/rank_steps.h"

#include <algorithm>
#include <climits>
#include <span>

namespace ss::analysis {

RankSteps::RankSteps(const ss::plugin::Host& host) {
  host.query("SELECT rank, start_ns, start_ns + duration_ns FROM steps", [&](std::span<const ss_value> row) {
    steps_[static_cast<int>(row[0].i)].push_back({row[1].i, row[2].i});
  });
  for (auto& [rank, v] : steps_) std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.start < b.start; });
}

std::optional<Interval> RankSteps::window(int rank, std::int64_t t) const {
  auto it = steps_.find(rank);
  if (it == steps_.end()) return Interval{INT64_MIN, INT64_MAX};
  const auto& v = it->second;
  auto s = std::upper_bound(v.begin(), v.end(), t, [](std::int64_t x, const Interval& i) { return x < i.start; });
  if (s == v.begin() || t >= std::prev(s)->end) return std::nullopt;
  return *std::prev(s);
}

std::int64_t RankSteps::length_inside(int rank, Interval iv) const {
  auto it = steps_.find(rank);
  if (it == steps_.end()) return 0;
  std::int64_t inside = 0, covered_to = iv.start;  // steps of one rank do not overlap; clip anyway
  for (const Interval& s : it->second) {
    const std::int64_t a = std::max(s.start, covered_to), b = std::min(s.end, iv.end);
    if (b > a) inside += b - a, covered_to = b;
  }
  return inside;
}

}  // namespace ss::analysis
