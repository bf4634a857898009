// Lengths of unions and intersections of time intervals: the arithmetic behind module time
// (ranges of one module may nest or repeat on several lanes) and exposed communication
// (collective time not covered by compute).
#pragma once

#include <utility>
#include <vector>

#include "storage/types.h"

namespace ss::compare {

using Interval = std::pair<TimeNs, TimeNs>;  // [first, second), first <= second

// Sorts and merges in place: afterwards the intervals are disjoint, non-touching and sorted.
void merge_intervals(std::vector<Interval>& intervals);

// Total length of merged (disjoint, sorted) intervals.
TimeNs total_length(const std::vector<Interval>& merged);

// Length of the intersection of two merged interval lists (one linear sweep).
TimeNs intersection_length(const std::vector<Interval>& a, const std::vector<Interval>& b);

// Length of the union of arbitrary intervals (copies, merges, sums).
TimeNs union_length(std::vector<Interval> intervals);

}  // namespace ss::compare
