// Per-module memory and time figures for the hierarchical memory view, and the memory-over-time
// series by category for its chart. Qt-free. Figures are for one rank; a value the profile cannot
// supply is kMissing (the view shows "—").
//
// Where each column comes from (docs/gui.md):
//  - params unsharded: modules.param_bytes (the module subtree's parameters at full size);
//    missing when no module of the profile has a size (traces do not record them);
//  - params sharded: ShardedParameter memory when the profile records it, else param_bytes /
//    world size for modules inside an FSDP unit (the share each rank keeps), else missing;
//  - gradients, optimizer states, activations, all-gather buffers: the peak of the bytes live in
//    that category attributed to the module or its descendants (allocations minus frees); missing
//    when the profile has no memory events of that category at all;
//  - peak while running: the rank's highest allocated bytes while any of the module's ranges run;
//  - forward / backward (incl. recompute) time: summed durations of the module's own ranges.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <vector>

#include "storage/profile_model.h"

namespace ss::memview {

inline constexpr std::int64_t kMissing = std::numeric_limits<std::int64_t>::min();

enum Column : int {
  kParamsSharded,
  kParamsUnsharded,
  kGradients,
  kOptimizerStates,
  kActivations,
  kAllGatherBuffers,
  kPeakWhileRunning,
  kForwardTime,
  kBackwardTime,
  kColumnCount,
};
bool column_is_time(int column);
const char* column_title(int column);

struct MemorySeries {
  std::vector<TimeNs> times;  // sample times (one per bucket, at the bucket's highest total)
  std::array<std::vector<std::int64_t>, kMemoryCategoryCount> by_category;  // bytes live at each time
  std::array<bool, kMemoryCategoryCount> present{};  // categories that occur in the profile
  TimeNs peak_time = 0;
  std::int64_t peak_bytes = 0;
  std::int32_t peak_module = -1;  // innermost module range running at the peak, -1 when none
};

struct ModuleMemoryStats {
  int rank = 0;
  std::vector<std::array<std::int64_t, kColumnCount>> modules;  // by Profile::modules index
  MemorySeries series;
};

// Reads memory_events of `rank` from the profile's file. Throws ProfileError on read errors.
ModuleMemoryStats compute_module_memory(const Profile& profile, int rank, std::size_t max_points = 1500);

// One module's share of the memory (what the chart highlights when a module is selected): the
// bytes live that are attributed to the module or its descendants, over time (sampled like
// MemorySeries: one sample per bucket, at the bucket's highest value), and the module's own
// ranges on the rank (when it runs).
struct ModuleSeries {
  std::int32_t module = -1;
  std::vector<TimeNs> times;
  std::vector<std::int64_t> bytes;
  std::int64_t peak_bytes = 0;
  TimeNs peak_time = 0;
  std::vector<std::pair<TimeNs, TimeNs>> running;  // the module's ranges on the rank, by start
};
// Throws ProfileError on read errors; an out-of-range module gives an empty series.
ModuleSeries compute_module_series(const Profile& profile, int rank, std::int32_t module, std::size_t max_points = 1500);

}  // namespace ss::memview
