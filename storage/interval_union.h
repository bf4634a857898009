// Unions of time intervals, and which of them holds a time: FSDP's ranges on a CPU lane, backward
// spans, the steps a replay compares, recompute / optimizer ranges. Intervals are closed
// [first, second]; a union is sorted and disjoint, so lookups are binary searches.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "storage/types.h"

namespace ss {

using TimeInterval = std::pair<TimeNs, TimeNs>;

// Sorted, disjoint union of the intervals (touching ones are joined).
inline std::vector<TimeInterval> interval_union(std::vector<TimeInterval> iv) {
  std::sort(iv.begin(), iv.end());
  std::vector<TimeInterval> out;
  for (const auto& x : iv) {
    if (!out.empty() && x.first <= out.back().second)
      out.back().second = std::max(out.back().second, x.second);
    else
      out.push_back(x);
  }
  return out;
}

// Index of the interval of a sorted, disjoint set that holds t, or -1.
inline std::ptrdiff_t interval_holding(const std::vector<TimeInterval>& set, TimeNs t) {
  auto it = std::upper_bound(set.begin(), set.end(), t, [](TimeNs v, const TimeInterval& iv) { return v < iv.first; });
  if (it == set.begin() || t > std::prev(it)->second) return -1;
  return std::prev(it) - set.begin();
}

// Busy time of a sorted, disjoint union clipped to [a, b].
inline TimeNs busy_in(const std::vector<TimeInterval>& set, TimeNs a, TimeNs b) {
  auto it = std::upper_bound(set.begin(), set.end(), a, [](TimeNs v, const TimeInterval& iv) { return v < iv.first; });
  if (it != set.begin()) --it;
  TimeNs total = 0;
  for (; it != set.end() && it->first < b; ++it) {
    const TimeNs s = std::max(it->first, a), e = std::min(it->second, b);
    if (e > s) total += e - s;
  }
  return total;
}

// The parts of [x.first, x.second] that no interval of a sorted, disjoint union covers, in order.
inline std::vector<TimeInterval> interval_difference(const TimeInterval& x, const std::vector<TimeInterval>& set) {
  std::vector<TimeInterval> out;
  TimeNs t = x.first;
  auto it = std::upper_bound(set.begin(), set.end(), t, [](TimeNs v, const TimeInterval& iv) { return v < iv.first; });
  if (it != set.begin()) --it;
  for (; it != set.end() && it->first < x.second && t < x.second; ++it) {
    if (it->second <= t || it->second <= it->first) continue;  // behind, or empty: covers nothing
    if (it->first > t) out.emplace_back(t, it->first);
    t = std::max(t, it->second);
  }
  if (t < x.second) out.emplace_back(t, x.second);
  return out;
}

}  // namespace ss
