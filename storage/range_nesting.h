// Depth and parent for the ranges of one lane (a CPU thread or a GPU stream), from their times.
// Producers give ranges in any order; each range's parent is the innermost range still open at
// its start. Ranges at one depth never overlap, so each depth is one drawable track.
#pragma once

#include <cstdint>
#include <vector>

#include "storage/types.h"

namespace ss {

struct Nesting {
  std::int32_t depth = 0;
  std::int32_t parent = -1;  // index into the input, -1 at depth 0
};

struct NestingResult {
  std::vector<std::size_t> order;    // input indices in (start asc, end desc) order: write rows in this order
  std::vector<Nesting> nesting;      // by input index
  std::int64_t improper = 0;         // ranges that end after their parent (not properly nested)
};

// `intervals` are (start, end) pairs with start <= end.
NestingResult nest_ranges(const std::vector<std::pair<TimeNs, TimeNs>>& intervals);

}  // namespace ss
