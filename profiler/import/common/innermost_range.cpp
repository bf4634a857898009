#include "profiler/import/common/innermost_range.h"

#include <algorithm>
#include <numeric>

namespace ss::import {

InnermostRangeIndex::InnermostRangeIndex(const std::vector<std::pair<TimeNs, TimeNs>>& ranges,
                                         const std::vector<std::int64_t>& values) {
  const std::size_t n = ranges.size();
  // Sweep points: (time, kind, index); at one time, ends (kind 0) before starts (kind 1), and
  // starts outer-first (longer first) so the inner range ends up on top of the stack.
  struct Point {
    TimeNs t;
    int kind;
    std::size_t i;
  };
  std::vector<Point> pts;
  pts.reserve(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    pts.push_back({ranges[i].first, 1, i});
    pts.push_back({std::max(ranges[i].first, ranges[i].second), 0, i});
  }
  std::sort(pts.begin(), pts.end(), [&](const Point& a, const Point& b) {
    if (a.t != b.t) return a.t < b.t;
    if (a.kind != b.kind) return a.kind < b.kind;
    if (a.kind == 1) {
      if (ranges[a.i].second != ranges[b.i].second) return ranges[a.i].second > ranges[b.i].second;
    }
    return a.i < b.i;
  });
  std::vector<std::size_t> stack;
  std::vector<char> closed(n, 0);
  std::size_t p = 0;
  while (p < pts.size()) {
    const TimeNs t = pts[p].t;
    for (; p < pts.size() && pts[p].t == t; ++p) {
      if (pts[p].kind == 0)
        closed[pts[p].i] = 1;
      else
        stack.push_back(pts[p].i);
    }
    // Lazy removal: a closed range under an open (improperly nested) one stays until exposed.
    while (!stack.empty() && closed[stack.back()]) stack.pop_back();
    const std::int64_t v = stack.empty() ? kNone : values[stack.back()];
    if (values_.empty() || values_.back() != v) {
      times_.push_back(t);
      values_.push_back(v);
    }
  }
}

std::int64_t InnermostRangeIndex::at(TimeNs t, std::int64_t none) const {
  std::size_t hint = times_.size();
  return at(t, none, hint);
}

std::int64_t InnermostRangeIndex::at(TimeNs t, std::int64_t none, std::size_t& hint) const {
  // The step holding t is the last one starting at or before t (times_ ascending).
  const std::size_t n = times_.size();
  auto holds = [&](std::size_t i) { return times_[i] <= t && (i + 1 == n || t < times_[i + 1]); };
  if (!(hint < n && holds(hint)) && !(hint + 1 < n && holds(++hint))) {
    const auto it = std::upper_bound(times_.begin(), times_.end(), t);
    if (it == times_.begin()) {
      hint = n;
      return none;
    }
    hint = static_cast<std::size_t>(it - times_.begin() - 1);
  }
  const std::int64_t v = values_[hint];
  return v == kNone ? none : v;
}

}  // namespace ss::import
