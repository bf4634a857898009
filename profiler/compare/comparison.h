// The comparison of two profiles A (the reference: measured, or the "before" run) and B (the
// simulation, or the "after" run) over an aligned window on one rank each: a headline (step time,
// communication, exposed communication) and per-module-per-phase, per-kernel-name and
// per-collective tables, each sorted by the absolute difference, largest first.
//
// Definitions (docs/compare.md says the same for users):
//  - module time: for each (module FQN, phase), the length of the union of that module's
//    RangeKind::Module ranges in that phase on the rank, each clipped to the window. Inclusive:
//    a parent's time contains its children's; a module whose ranges nest or repeat on several
//    lanes (CPU thread and GPU stream) is counted once per instant.
//  - kernel and collective totals: the summed durations of the events that start in the window.
//  - communication: the union of collective kernel intervals (clipped to the window); exposed
//    communication: the part of it not covered by the union of compute kernels on the same rank.
//    A rank without collective kernels uses the collectives table's intervals.
//  - delta = B - A; error % = 100 * (B - A) / A (absent when A is 0).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "profiler/compare/alignment.h"
#include "storage/profile_model.h"

namespace ss::compare {

struct Measure {
  TimeNs a = 0;
  TimeNs b = 0;
  TimeNs delta() const { return b - a; }
  std::optional<double> error_pct() const {
    if (a == 0) return std::nullopt;
    return 100.0 * static_cast<double>(b - a) / static_cast<double>(a);
  }
};

struct Headline {
  Measure step_time;       // window length
  Measure compute;         // union of compute kernels in the window
  Measure communication;   // union of collective kernels in the window
  Measure exposed_communication;
};

struct ModuleDiff {
  std::string fqn;
  RangePhase phase = RangePhase::None;
  std::int64_t count_a = 0;  // ranges that intersect the window
  std::int64_t count_b = 0;
  Measure time;
  // Where the module's first range in the window starts on each side (profile clock), so a view
  // can move both timelines to it; nullopt on a side without the module.
  std::optional<TimeNs> first_a;
  std::optional<TimeNs> first_b;
};

struct KernelDiff {
  std::string name;
  std::int64_t count_a = 0;
  std::int64_t count_b = 0;
  Measure time;
};

struct CollectiveDiff {
  CollectiveType type = CollectiveType::Unknown;
  std::string process_group;  // name (and description) from the file, "" when unknown
  std::int64_t bytes = 0;
  std::int64_t count_a = 0;
  std::int64_t count_b = 0;
  Measure time;
};

struct Comparison {
  std::string path_a;
  std::string path_b;
  Alignment requested;
  ResolvedAlignment alignment;
  Headline headline;
  std::vector<ModuleDiff> modules;
  std::vector<KernelDiff> kernels;
  std::vector<CollectiveDiff> collectives;
};

// Process group labels by process_groups.id, read from the profile file at `path` (the in-memory
// model does not hold them). Empty when the file cannot be read.
std::vector<std::pair<RowId, std::string>> read_process_group_labels(const std::string& path);

// Throws CompareError when a rank or step is missing (see resolve_alignment).
Comparison compare_profiles(const Profile& a, const Profile& b, const Alignment& alignment);

}  // namespace ss::compare
