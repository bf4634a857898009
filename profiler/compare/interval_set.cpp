#include "profiler/compare/interval_set.h"

#include <algorithm>

namespace ss::compare {

void merge_intervals(std::vector<Interval>& v) {
  std::sort(v.begin(), v.end());
  std::size_t out = 0;
  for (const Interval& iv : v) {
    if (iv.second <= iv.first) continue;  // empty intervals add nothing
    if (out > 0 && iv.first <= v[out - 1].second) {
      v[out - 1].second = std::max(v[out - 1].second, iv.second);
    } else {
      v[out++] = iv;
    }
  }
  v.resize(out);
}

TimeNs total_length(const std::vector<Interval>& merged) {
  TimeNs t = 0;
  for (const Interval& iv : merged) t += iv.second - iv.first;
  return t;
}

TimeNs intersection_length(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  TimeNs t = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const TimeNs lo = std::max(a[i].first, b[j].first);
    const TimeNs hi = std::min(a[i].second, b[j].second);
    if (hi > lo) t += hi - lo;
    // Advance whichever ends first: it cannot meet anything further in the other list.
    if (a[i].second < b[j].second)
      ++i;
    else
      ++j;
  }
  return t;
}

TimeNs union_length(std::vector<Interval> intervals) {
  merge_intervals(intervals);
  return total_length(intervals);
}

}  // namespace ss::compare
