// Module ranges per CPU thread, for "which module was running on thread T at time t?". A kernel
// or an allocation belongs to the innermost module range open on its launching thread at the
// launch time (research/collector.md 2.7a). Ranges are start/end pairs, not necessarily LIFO
// (backward ranges open and close from autograd hooks), so "innermost" means the range with the
// latest start that contains t.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "storage/types.h"

namespace ss::collector {

inline constexpr TimeNs kOpenEnd = std::numeric_limits<TimeNs>::max();

struct LaneRange {
  TimeNs start = 0;
  TimeNs end = kOpenEnd;  // kOpenEnd while open
  std::uint64_t marker_id = 0;
  std::string fqn;
  RangePhase phase = RangePhase::None;
};

class ModuleLanes {
 public:
  void open(std::uint32_t tid, std::uint64_t marker_id, TimeNs start, std::string fqn, RangePhase phase);
  // Returns false when no open range on that thread has this id.
  bool close(std::uint32_t tid, std::uint64_t marker_id, TimeNs end);
  // Closes by id on whatever thread opened it (start/end ranges may end on another thread).
  bool close_any_thread(std::uint64_t marker_id, TimeNs end);
  // The innermost range containing t on thread tid; nullptr when none.
  const LaneRange* innermost(std::uint32_t tid, TimeNs t) const;
  // Forgets ranges that ended before `before` (bounded memory on long runs).
  void prune(TimeNs before);
  std::size_t size() const;

 private:
  std::unordered_map<std::uint32_t, std::vector<LaneRange>> lanes_;  // each sorted by start
};

}  // namespace ss::collector
