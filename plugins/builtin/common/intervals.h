// Interval arithmetic on half-open nanosecond intervals [start, end): union, length, clipping,
// intersection and difference. The built-in analyses reduce "busy", "overlapped" and "idle" to
// these operations on per-rank merged interval lists.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace ss::analysis {

struct Interval {
  std::int64_t start = 0;
  std::int64_t end = 0;
  std::int64_t length() const { return end > start ? end - start : 0; }
};

// Sorted, disjoint, non-empty intervals: the result of merge() and of the operations below.
using IntervalSet = std::vector<Interval>;

IntervalSet merge(std::vector<Interval> intervals);
std::int64_t total_length(const IntervalSet& s);
IntervalSet clip(const IntervalSet& s, std::int64_t lo, std::int64_t hi);
IntervalSet intersect(const IntervalSet& a, const IntervalSet& b);
IntervalSet subtract(const IntervalSet& a, const IntervalSet& b);  // a minus b
// Length of [iv.start, iv.end) covered by s (binary search; s must be merged).
std::int64_t covered_length(const IntervalSet& s, Interval iv);
// The gaps of s inside [lo, hi).
IntervalSet gaps(const IntervalSet& s, std::int64_t lo, std::int64_t hi);

}  // namespace ss::analysis
