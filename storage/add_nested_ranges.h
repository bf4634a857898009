// Adds one lane's ranges (a CPU thread or a GPU stream) to a profile with their nesting, the way
// every producer does it (the Kineto, nsys and snapshot importers, the collector's merge).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "storage/profile_writer.h"
#include "storage/range_nesting.h"

namespace ss {

// `intervals[k]` is range k's (start, end); `make_row(k)` gives its row, all but depth and parent,
// which come from the nesting (the parent as the row id it was given). Rows are added parents
// first, in (start asc, end desc) order. Returns each range's row id, by input index.
template <typename MakeRow>
std::vector<RowId> add_nested_ranges(ProfileWriter& w, const std::vector<std::pair<TimeNs, TimeNs>>& intervals,
                                     MakeRow&& make_row) {
  const NestingResult nr = nest_ranges(intervals);
  std::vector<RowId> ids(intervals.size(), kNoRow);
  for (std::size_t k : nr.order) {
    RangeRow r = make_row(k);
    r.depth = nr.nesting[k].depth;
    const int parent = nr.nesting[k].parent;
    r.parent = parent >= 0 ? ids[static_cast<std::size_t>(parent)] : kNoRow;
    ids[k] = w.add_range(r);
  }
  return ids;
}

}  // namespace ss
