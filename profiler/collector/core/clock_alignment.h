// Per-rank clock offsets for the merge. Ranks on one host share CLOCK_REALTIME (CUPTI's default
// timestamp source on Linux), so they need no correction. Ranks on other hosts are aligned on
// their collectives: the k-th collective of one communicator finishes at nearly the same instant
// on every member (nobody can leave an all-gather before the last rank's data arrived), so the
// median of (reference end - rank end) over matched collectives estimates the clock difference.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "storage/types.h"

namespace ss::collector {

struct RankClockInput {
  int rank = 0;
  std::string host;
  // (process group name, sequence) -> end time on this rank's raw clock (unix ns)
  std::map<std::pair<std::string, std::int64_t>, TimeNs> collective_ends;
};

struct ClockOffset {
  int rank = 0;
  TimeNs offset_ns = 0;      // add to this rank's raw times
  int matched = 0;           // collectives the estimate used (0: none, offset left at 0)
};

// The reference is the lowest rank; its host's ranks get offset 0.
std::vector<ClockOffset> estimate_clock_offsets(const std::vector<RankClockInput>& ranks);

}  // namespace ss::collector
