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
#include <memory>
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

// One row of memory_events: bytes allocated (> 0) or freed (< 0) at a time, in a category
// (0..kMemoryCategoryCount-1), attributed to a module (Profile::modules index, -1 when none).
struct MemoryEvent {
  TimeNs time;
  std::int64_t bytes;
  int category;
  std::int32_t module;
};
// The rank's memory events in time order, each free charged to its allocation's module and
// category (matched by address). Throws ProfileError on read errors.
std::vector<MemoryEvent> read_memory_events(const Profile& profile, int rank);

// Events kept in ModuleMemoryStats::events for re-sampling a zoomed chart (24 bytes each: about
// 96 MB at this count); a rank with more keeps none and its chart stays at the whole-profile sampling.
inline constexpr std::size_t kMaxKeptEvents = 4'000'000;

struct ModuleMemoryStats {
  int rank = 0;
  std::vector<std::array<std::int64_t, kColumnCount>> modules;  // by Profile::modules index
  // By Profile::modules index: in a pipelined recording (meta rank<R>.pipeline), a module that
  // neither it, a descendant nor an ancestor below the root ran on this rank: it lives on another
  // rank's pipeline stage (the modules table is every rank's).
  std::vector<bool> on_other_stage;
  MemorySeries series;
  std::shared_ptr<const std::vector<MemoryEvent>> events;  // the rank's events (null above kMaxKeptEvents)
};

// The stacked series over [t0, t1] only (a zoomed chart at full detail): the state at t0, then
// one sample per bucket of (t1 - t0) / max_points at the bucket's highest total, and the state at
// t1; `present` covers all of `events` so the categories match the whole-profile series.
MemorySeries sample_window(const std::vector<MemoryEvent>& events, TimeNs t0, TimeNs t1, std::size_t max_points = 1500);

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
// `events`: the rank's events when the caller has them (ModuleMemoryStats::events), else they are
// read from the file. Throws ProfileError on read errors; an out-of-range module gives an empty series.
ModuleSeries compute_module_series(const Profile& profile, int rank, std::int32_t module,
                                   const std::vector<MemoryEvent>* events = nullptr, std::size_t max_points = 1500);

// The ranges of `running` (sorted by start) that overlap [t0, t1], clipped to it, with neighbours
// less than `min_gap` apart merged into one: the bands the chart draws for a module, at most about
// (t1 - t0) / min_gap of them however many steps the profile holds (a pixel's worth of time as
// `min_gap` makes the drawing cost follow the chart's width, not the profile's length).
std::vector<std::pair<TimeNs, TimeNs>> visible_runs(const std::vector<std::pair<TimeNs, TimeNs>>& running, TimeNs t0, TimeNs t1,
                                                    double min_gap);

}  // namespace ss::memview
