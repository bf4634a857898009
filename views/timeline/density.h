// Density shading for folded runs: instead of one grey box with an event count, each pixel
// column of a fold is drawn with the fraction of its time that the track is busy (Perfetto and
// Tracy shade zoomed-out tracks the same way). The busy time of any window comes from a prefix
// sum of durations kept per block of kSpanBlock events (0.25 bytes per event), so a column costs
// a galloping search from the previous column plus a scan of under one block.
//
// Exact for tracks whose events do not overlap (one CUDA stream, one nesting depth); on a track
// whose events overlap, overlapped time counts twice and the fraction is clamped to 1.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "views/timeline/draw_items.h"

namespace ss::timeline {

// One shaded pixel column: busy fraction in (0, 1] of the time [time_at(x), time_at(x + 1)).
struct DensityColumn {
  float x;
  float busy;
};

// Sum of the durations of the events before each block of kSpanBlock events.
template <typename Event>
std::vector<TimeNs> build_busy_index(const std::vector<Event>& events) {
  std::vector<TimeNs> out;
  out.reserve(events.size() / kSpanBlock + 1);
  TimeNs sum = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (i % kSpanBlock == 0) out.push_back(sum);
    sum += events[i].end - events[i].start;
  }
  return out;
}

// Busy time before t, walking forward: each call must pass t no smaller than the previous call's.
// Needs ends sorted; `block_ends` is build_span_index, `busy` is build_busy_index.
template <typename Event>
class BusyCursor {
 public:
  BusyCursor(const std::vector<Event>& events, const std::vector<TimeNs>& block_ends, const std::vector<TimeNs>& busy)
      : ev_(events), block_ends_(block_ends), busy_(busy) {}

  double busy_before(double t) {
    const std::size_t n = ev_.size();
    // k: first event ending at or after t; every event before it ends before t.
    const std::size_t k = detail::blocked_lower_bound(k_, n, t, block_ends_, kSpanBlock,
                                                      [&](std::size_t i) { return static_cast<double>(ev_[i].end); });
    // prefix(k): sum of durations of events [0, k), from the last prefix when k is near it.
    if (k - k_ >= kSpanBlock) {
      k_ = k - k % kSpanBlock;
      prefix_ = busy_[k_ / kSpanBlock];
    }
    for (; k_ < k; ++k_) prefix_ += ev_[k_].end - ev_[k_].start;
    double partial = 0;
    if (k < n && static_cast<double>(ev_[k].start) < t) partial = t - static_cast<double>(ev_[k].start);
    return static_cast<double>(prefix_) + partial;
  }

 private:
  const std::vector<Event>& ev_;
  const std::vector<TimeNs>& block_ends_;
  const std::vector<TimeNs>& busy_;
  std::size_t k_ = 0;
  TimeNs prefix_ = 0;
};

// The shaded columns under the folded items (count > 1) of `items` (build order), from the first
// event's start to the last one's end, appended to `out` in x order; columns with no busy time
// are left out. Needs ends sorted (so the run's last event ends last).
template <typename Event>
void build_density(const std::vector<Event>& events, const std::vector<TimeNs>& block_ends, const std::vector<TimeNs>& busy,
                   const std::vector<SpanItem>& items, const Viewport& vp, std::vector<DensityColumn>& out) {
  if (events.empty()) return;
  BusyCursor<Event> cursor(events, block_ends, busy);
  const int width = static_cast<int>(std::ceil(vp.width_px));
  int next_col = 0;  // columns before this one are done (folds may share a boundary column)
  double before = -1, before_t = 0;
  for (const SpanItem& s : items) {
    if (s.count <= 1) continue;
    // The run's real extent: its box ends at the run's last absorbing end, a few pixels short of
    // the events it skipped over (draw_items.h), and those columns are busy too.
    const double first_x = vp.x_of(static_cast<double>(events[s.first].start));
    const double last_x = vp.x_of(static_cast<double>(events[s.first + s.count - 1].end));
    const int c0 = std::max({next_col, static_cast<int>(std::floor(std::max(first_x, -1.0))), 0});
    const int c1 = std::min(width, static_cast<int>(std::ceil(std::min(std::max(last_x, first_x + 1), vp.width_px + 1))));
    for (int c = c0; c < c1; ++c) {
      const double ta = vp.time_at(c), tb = vp.time_at(c + 1);
      const double a = before >= 0 && before_t == ta ? before : cursor.busy_before(ta);
      const double b = cursor.busy_before(tb);
      before = b;
      before_t = tb;
      const double f = std::min(1.0, (b - a) / vp.ns_per_px);
      if (f > 0) out.push_back({static_cast<float>(c), static_cast<float>(f)});
    }
    next_col = std::max(next_col, c1);
  }
}

}  // namespace ss::timeline
