#include "storage/range_nesting.h"

#include <algorithm>
#include <numeric>

#include "storage/sorted_runs.h"

namespace ss {

NestingResult nest_ranges(const std::vector<std::pair<TimeNs, TimeNs>>& intervals) {
  NestingResult r;
  r.order.resize(intervals.size());
  std::iota(r.order.begin(), r.order.end(), std::size_t{0});
  // Longer ranges first at equal start, so an enclosing range precedes what it encloses. A lane's
  // ranges come in a few time-ordered runs (an importer's module ranges, then its operators).
  stable_sort_runs(r.order.begin(), r.order.end(), [&](std::size_t a, std::size_t b) {
    if (intervals[a].first != intervals[b].first) return intervals[a].first < intervals[b].first;
    return intervals[a].second > intervals[b].second;
  });
  r.nesting.resize(intervals.size());
  std::vector<std::size_t> open;  // stack of input indices, innermost last
  for (std::size_t i : r.order) {
    const auto [start, end] = intervals[i];
    // Close every range that ended by this start. A range below an unfinished (improperly
    // nested) one stays until that one closes: this keeps each depth free of overlaps.
    while (!open.empty() && intervals[open.back()].second <= start)
      open.pop_back();
    Nesting n;
    n.depth = static_cast<std::int32_t>(open.size());
    if (!open.empty()) {
      n.parent = static_cast<std::int32_t>(open.back());
      if (intervals[open.back()].second < end) ++r.improper;
    }
    r.nesting[i] = n;
    open.push_back(i);
  }
  return r;
}

}  // namespace ss
