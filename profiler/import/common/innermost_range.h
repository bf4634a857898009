// "Which range is innermost at time t on this lane?" answered in O(log n): the ranges of one lane
// (a CPU thread) are swept once into a step function of time -> innermost open range. Used to
// attribute kernels (through their launch time), memory events and CPU ops to module ranges.
#pragma once

#include <cstdint>
#include <vector>

#include "storage/types.h"

namespace ss::import {

class InnermostRangeIndex {
 public:
  // Ranges are [start, end); `values[i]` is what a query inside range i returns (e.g. a module id).
  // A range that starts later, or starts together but ends earlier, is the inner one.
  InnermostRangeIndex(const std::vector<std::pair<TimeNs, TimeNs>>& ranges, const std::vector<std::int64_t>& values);
  InnermostRangeIndex() = default;

  // The value of the innermost range containing t, or `none`.
  std::int64_t at(TimeNs t, std::int64_t none = -1) const;
  // The same, for queries that mostly come in time order (a lane's events, a trace's allocations):
  // `hint` keeps where the last one landed, and that step and the next are tried before a search.
  std::int64_t at(TimeNs t, std::int64_t none, std::size_t& hint) const;
  bool empty() const { return times_.empty(); }

 private:
  std::vector<TimeNs> times_;          // segment starts, ascending
  std::vector<std::int64_t> values_;   // value of the segment, -1 = no range open
  static constexpr std::int64_t kNone = INT64_MIN;
};

}  // namespace ss::import
