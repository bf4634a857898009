#include "plugins/builtin/common/intervals.h"

#include <algorithm>

namespace ss::analysis {

IntervalSet merge(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
  IntervalSet out;
  for (const auto& iv : v) {
    if (iv.end <= iv.start) continue;
    if (!out.empty() && iv.start <= out.back().end)
      out.back().end = std::max(out.back().end, iv.end);
    else
      out.push_back(iv);
  }
  return out;
}

std::int64_t total_length(const IntervalSet& s) {
  std::int64_t t = 0;
  for (const auto& iv : s) t += iv.length();
  return t;
}

IntervalSet clip(const IntervalSet& s, std::int64_t lo, std::int64_t hi) {
  IntervalSet out;
  for (const auto& iv : s) {
    Interval c{std::max(iv.start, lo), std::min(iv.end, hi)};
    if (c.end > c.start) out.push_back(c);
  }
  return out;
}

IntervalSet intersect(const IntervalSet& a, const IntervalSet& b) {
  IntervalSet out;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    Interval c{std::max(a[i].start, b[j].start), std::min(a[i].end, b[j].end)};
    if (c.end > c.start) out.push_back(c);
    (a[i].end < b[j].end) ? ++i : ++j;
  }
  return out;
}

IntervalSet subtract(const IntervalSet& a, const IntervalSet& b) {
  IntervalSet out;
  std::size_t j = 0;
  for (const auto& iv : a) {
    std::int64_t cur = iv.start;
    while (j < b.size() && b[j].end <= cur) ++j;
    std::size_t k = j;
    while (k < b.size() && b[k].start < iv.end) {
      if (b[k].start > cur) out.push_back({cur, b[k].start});
      cur = std::max(cur, b[k].end);
      ++k;
    }
    if (cur < iv.end) out.push_back({cur, iv.end});
  }
  return out;
}

std::int64_t covered_length(const IntervalSet& s, Interval iv) {
  auto it = std::lower_bound(s.begin(), s.end(), iv.start, [](const Interval& x, std::int64_t t) { return x.end <= t; });
  std::int64_t t = 0;
  for (; it != s.end() && it->start < iv.end; ++it) t += std::max<std::int64_t>(0, std::min(it->end, iv.end) - std::max(it->start, iv.start));
  return t;
}

IntervalSet gaps(const IntervalSet& s, std::int64_t lo, std::int64_t hi) {
  return subtract(IntervalSet{{lo, hi}}, s);
}

}  // namespace ss::analysis
