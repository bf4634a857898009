// What the memory chart needs besides the data, without Qt: a byte unit chosen from the range
// (so ticks read "40 MiB", not "0.039"), round tick steps (1, 2 or 5 × 10^k), readable names for
// the memory categories, and the readout at a time (what the hover line shows).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "views/memory/module_memory_stats.h"

namespace ss::memview {

struct ByteUnit {
  double bytes = 1;         // bytes per unit
  const char* name = "B";   // "B", "KiB", "MiB", "GiB"
};
// The largest binary unit that `max_bytes` reaches at least once (GiB from 1 GiB up, ...).
ByteUnit byte_unit_for(std::int64_t max_bytes);

struct Ticks {
  double step = 1;   // 1, 2 or 5 × 10^k
  double first = 0;  // first tick at or above the range's start (a multiple of step)
  int decimals = 0;  // digits after the point that the step needs
};
// At most about `target` ticks over [lo, hi].
Ticks nice_ticks(double lo, double hi, int target = 6);
// `hi` rounded up to a round top for a value axis starting at 0 (the lowest multiple of a
// nice_ticks step for 4 to 8 ticks).
double nice_ceiling(double hi);

// "Sharded parameters", "Gradients", "Optimizer state", ... (the legend and the readout).
const char* category_label(MemoryCategory category);

struct MemoryReadout {
  bool valid = false;  // false before the first sample
  TimeNs time = 0;     // the sample shown (at or before the time asked for)
  std::int64_t total = 0;
  std::array<std::int64_t, kMemoryCategoryCount> by_category{};
};
// The memory live at `t`: the last sample of the series at or before `t`.
MemoryReadout readout_at(const MemorySeries& series, TimeNs t);

}  // namespace ss::memview
