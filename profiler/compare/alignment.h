// Which part of each profile a comparison looks at: one rank on each side and a time window on
// that rank, either one training step or the whole span of the rank's events.
//
// Default (no step asked for): the first step number present on both sides' ranks; when the two
// share no step number, each side's own first step; a side without steps uses its whole span
// (first kernel start to last kernel end), so the two are aligned at their first kernel.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "storage/profile_model.h"

namespace ss::compare {

struct Alignment {
  std::optional<std::int64_t> step_a;  // step number on side A; nullopt = default rule above
  std::optional<std::int64_t> step_b;  // when only one side's step is given, the other uses the same number
  int rank_a = 0;
  int rank_b = 0;
  bool operator==(const Alignment&) const = default;
};

struct Window {
  int rank = 0;
  TimeNs start = 0;
  TimeNs end = 0;
  std::optional<std::int64_t> step;  // nullopt: the rank's whole span

  TimeNs length() const { return end - start; }
  // Events belong to a window by their start: [start, end) for a step, so that an event starting
  // exactly at a step boundary counts once; [start, end] for the whole span.
  bool contains_start(TimeNs t) const { return t >= start && (t < end || (!step && t == end)); }
  // The part of [s, e) inside the window (empty pair when none).
  std::pair<TimeNs, TimeNs> clip(TimeNs s, TimeNs e) const {
    const TimeNs lo = s > start ? s : start;
    const TimeNs hi = e < end ? e : end;
    return hi > lo ? std::pair<TimeNs, TimeNs>{lo, hi} : std::pair<TimeNs, TimeNs>{0, 0};
  }
};

struct ResolvedAlignment {
  Window a;
  Window b;
  std::string description;  // "step 3 on both sides", "first step on each side (3 vs 0)", ...
  // Add to a B time to place it on A's axis (A's window start and B's coincide).
  TimeNs b_to_a_offset() const { return a.start - b.start; }
};

// Throws CompareError for a rank or step that a profile lacks, naming the profile and listing
// what it has.
ResolvedAlignment resolve_alignment(const Profile& a, const Profile& b, const Alignment& alignment);

// The rank's whole span: first kernel start to last kernel end (ranges, then collectives, when
// the rank has no kernels). Throws CompareError when the rank has no event at all.
Window whole_span(const Profile& p, int rank);

}  // namespace ss::compare
