// Density shading for folded runs: instead of one grey box with an event count, each pixel
// column of a fold is drawn with the fraction of its time covered by the track's events
// (Perfetto and Tracy shade zoomed-out tracks the same way).
//
// Coverage is the measure of the union of the events, so overlapping events (collectives on an
// NCCL stream, steps) never count twice. Walking events in start order with the state
// (U = measure of the union so far, until = the largest end so far), the covered time before t is
// U - max(0, until - t) once every event starting before t is walked (the event that reached
// `until` starts before t, so [t, until] is covered). The state is kept at the start of each
// block of kSpanBlock events, with the last start of each block for searching (0.75 bytes per
// event), so a column costs a galloping search from the previous column plus a walk of under one
// block. A column holding kCoarseEvents events or more uses the block states alone (no event is
// read): the covered time at each end is interpolated between the two block boundaries around
// it, an error under one block's coverage (of the column's two or more blocks), and in practice
// far less: below what the 16 shading levels show.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "views/timeline/draw_items.h"

namespace ss::timeline {

// One shaded pixel column: covered fraction in (0, 1] of the time [time_at(x), time_at(x + 1)).
struct DensityColumn {
  float x;
  float busy;
};

inline constexpr std::size_t kCoarseEvents = 2 * kSpanBlock;

struct CoverIndex {
  std::vector<TimeNs> last_start;  // start of the last event of each block
  std::vector<TimeNs> covered;     // U before each block, and after the last (one more entry)
  std::vector<TimeNs> until;       // largest end before each block (lowest TimeNs: none), and after the last
  bool empty() const { return last_start.empty(); }
  std::size_t memory_bytes() const { return (last_start.capacity() + covered.capacity() + until.capacity()) * sizeof(TimeNs); }
};

namespace detail {
inline void cover_step(TimeNs start, TimeNs end, TimeNs& covered, TimeNs& until) {
  if (end <= until) return;
  covered += end - std::max(start, until);
  until = end;
}
}  // namespace detail

// Needs events sorted by start (every track is).
template <typename Event>
CoverIndex build_cover_index(const std::vector<Event>& events) {
  CoverIndex ix;
  const std::size_t blocks = (events.size() + kSpanBlock - 1) / kSpanBlock;
  ix.last_start.reserve(blocks);
  ix.covered.reserve(blocks);
  ix.until.reserve(blocks);
  TimeNs covered = 0, until = std::numeric_limits<TimeNs>::lowest();
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (i % kSpanBlock == 0) {
      ix.last_start.push_back(events[std::min(events.size(), i + kSpanBlock) - 1].start);
      ix.covered.push_back(covered);
      ix.until.push_back(until);
    }
    detail::cover_step(events[i].start, events[i].end, covered, until);
  }
  ix.covered.push_back(covered);
  ix.until.push_back(until);
  return ix;
}

// Covered time before t, walking forward: each call must pass t no smaller than the previous one.
template <typename Event>
class CoverCursor {
 public:
  CoverCursor(const std::vector<Event>& events, const CoverIndex& index) : ev_(events), ix_(index) {}

  double covered_before(double t) {
    // k: first event starting at or after t; every event before it starts before t.
    const std::size_t k = detail::blocked_lower_bound(k_, ev_.size(), t, ix_.last_start, kSpanBlock,
                                                      [&](std::size_t i) { return static_cast<double>(ev_[i].start); });
    if (k - k_ >= kSpanBlock) {  // jump to the block's saved state
      k_ = k - k % kSpanBlock;
      covered_ = ix_.covered[k_ / kSpanBlock];
      until_ = ix_.until[k_ / kSpanBlock];
    }
    for (; k_ < k; ++k_) detail::cover_step(ev_[k_].start, ev_[k_].end, covered_, until_);
    return static_cast<double>(covered_) - std::max(0.0, static_cast<double>(until_) - t);
  }

  // The same, interpolated in time between the block boundaries around t: reads the index only.
  double coarse_covered_before(double t) {
    const std::size_t nb = ix_.last_start.size();
    auto below = [&](std::size_t b) { return static_cast<double>(ix_.last_start[b]) < t; };
    if (b_ < nb && below(b_)) b_ = detail::gallop_past(b_, nb, below);
    if (b_ == 0) return 0;  // t is before the first block's last start: little or nothing covered
    // At a boundary b (1 <= b <= nb), time T = the last start before it, where the covered time
    // is known exactly from the state after the blocks before b.
    auto at = [&](std::size_t b) {
      const double T = static_cast<double>(ix_.last_start[b - 1]);
      return std::pair{T, static_cast<double>(ix_.covered[b]) - std::max(0.0, static_cast<double>(ix_.until[b]) - T)};
    };
    if (b_ == nb) return static_cast<double>(ix_.covered[nb]) - std::max(0.0, static_cast<double>(ix_.until[nb]) - t);
    const auto [t0, v0] = at(b_);
    const auto [t1, v1] = at(b_ + 1);
    return t1 > t0 ? v0 + (v1 - v0) * std::clamp((t - t0) / (t1 - t0), 0.0, 1.0) : v0;
  }

 private:
  const std::vector<Event>& ev_;
  const CoverIndex& ix_;
  std::size_t k_ = 0;
  std::size_t b_ = 0;  // block cursor of coarse_covered_before
  TimeNs covered_ = 0;
  TimeNs until_ = std::numeric_limits<TimeNs>::lowest();
};

// The pixel columns [c0, c1) shaded under a fold whose first event starts at first_x and whose
// extent ends at last_x (its largest end, or its box's right edge when that is further), leaving
// out the columns before next_col (done by the previous fold: folds may share a boundary column).
inline std::pair<int, int> fold_columns(double first_x, double last_x, int next_col, const Viewport& vp) {
  const int width = static_cast<int>(std::ceil(vp.width_px));
  const int c0 = std::max({next_col, static_cast<int>(std::floor(std::max(first_x, -1.0))), 0});
  const int c1 = std::min(width, static_cast<int>(std::ceil(std::min(std::max(last_x, first_x + 1), vp.width_px + 1))));
  return {c0, c1};
}

// The shaded columns under the folded items (count > 1) of `items` (build order), from the run's
// first start to its last end, appended to `out` in x order; columns with nothing covered are
// left out. (A fold's box ends at the run's last absorbing end, a few pixels short of the events
// it skipped over, draw_items.h; those columns are covered too.)
template <typename Event>
void build_density(const std::vector<Event>& events, const CoverIndex& index, const std::vector<SpanItem>& items,
                   const Viewport& vp, std::vector<DensityColumn>& out) {
  if (events.empty() || index.empty()) return;
  CoverCursor<Event> cursor(events, index);
  int next_col = 0;
  double before = -1, before_t = 0;
  for (const SpanItem& s : items) {
    if (s.count <= 1) continue;
    TimeNs last_end = events[s.first].end;
    // The run's events may end out of order on tracks whose events overlap: its extent is the
    // largest end (bounded walk: only folds, whose count is what the pixels hold).
    if (s.count <= 64)
      for (std::uint32_t i = s.first; i < s.first + s.count; ++i) last_end = std::max(last_end, events[i].end);
    else
      last_end = std::max(last_end, events[s.first + s.count - 1].end);
    const auto [c0, c1] = fold_columns(vp.x_of(static_cast<double>(events[s.first].start)),
                                       std::max(vp.x_of(static_cast<double>(last_end)), static_cast<double>(s.x1)), next_col, vp);
    // Many events per column: block states only (see above).
    const bool coarse = c1 > c0 && s.count / static_cast<std::size_t>(c1 - c0) >= kCoarseEvents;
    auto covered_before = [&](double t) { return coarse ? cursor.coarse_covered_before(t) : cursor.covered_before(t); };
    if (coarse) before = -1;  // the two ways may differ slightly at a shared boundary
    for (int c = c0; c < c1; ++c) {
      const double ta = vp.time_at(c), tb = vp.time_at(c + 1);
      const double a = before >= 0 && before_t == ta ? before : covered_before(ta);
      const double b = covered_before(tb);
      before = b;
      before_t = tb;
      const double f = std::clamp((b - a) / vp.ns_per_px, 0.0, 1.0);
      if (f > 0) out.push_back({static_cast<float>(c), static_cast<float>(f)});
    }
    next_col = std::max(next_col, c1);
    if (coarse) before = -1;
  }
}

}  // namespace ss::timeline
