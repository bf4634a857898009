// Culling and folding: turns one sorted event track into the boxes to draw for a viewport.
// Work grows with the number of visible boxes (about the width in pixels), not with the number
// of events: binary search finds the first visible event, and runs of narrow events are skipped
// with binary searches too (the technique of Tracy's PreprocessZoneLevel, research/gui.md §2.1).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "storage/profile_model.h"
#include "views/timeline/viewport.h"

namespace ss::timeline {

inline constexpr double kMinVisiblePx = 3.0;  // narrower events are folded

// One box on a track. count == 1: the event `first`; count > 1: a folded run of `count`
// consecutive events starting at `first`, drawn as one box labelled with the count.
struct SpanItem {
  float x0;
  float x1;
  std::uint32_t first;
  std::uint32_t count;
};

// One bar per pixel column of a counter track: the step function's min and max in the column.
struct CounterBar {
  float x;
  std::int64_t min;
  std::int64_t max;
};

// True when each event ends no earlier than the one before it (events on one CUDA stream or one
// nesting depth never overlap, so this holds for real tracks). It lets folding jump with a binary
// search on `end`; otherwise folding walks the run one event at a time with the same result.
template <typename Event>
bool ends_sorted(const std::vector<Event>& events) {
  return std::is_sorted(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.end < b.end; });
}

namespace detail {
inline float clamp_x(double x, double width) { return static_cast<float>(std::clamp(x, -16.0, width + 16.0)); }

// For a predicate true at `at` and then false from some index on: the first index in (at, n] where
// it is false (n if none), by doubling steps from `at` and then a binary search in the last step.
template <typename Below>
std::size_t gallop_past(std::size_t at, std::size_t n, Below below) {
  std::size_t lo = at, step = 1, hi = at + 1;
  while (hi < n && below(hi)) {
    lo = hi;
    step *= 2;
    hi = lo + step;
  }
  hi = std::min(hi, n);
  std::size_t a = lo + 1;
  while (a < hi) {
    const std::size_t mid = a + (hi - a) / 2;
    if (below(mid))
      a = mid + 1;
    else
      hi = mid;
  }
  return a;
}

// First index in [from, n) whose key is >= t, for keys that never decrease, using `block_last`
// (the key of the last element of each block of `block` elements): gallop over that small
// array, then binary-search inside one block. Touches a few cache lines where a binary search
// over a 10M-element array misses the cache about 20 times.
template <typename KeyAt>
std::size_t blocked_lower_bound(std::size_t from, std::size_t n, double t, const std::vector<TimeNs>& block_last,
                                std::size_t block, KeyAt key_at) {
  if (from >= n || key_at(from) >= t) return from;
  const std::size_t nb = block_last.size();
  std::size_t b = from / block;
  auto below = [&](std::size_t k) { return static_cast<double>(block_last[k]) < t; };
  if (below(b)) {
    b = gallop_past(b, nb, below);
    if (b >= nb) return n;
  }
  std::size_t a = std::max(from, b * block), e = std::min(n, (b + 1) * block);
  while (a < e) {
    const std::size_t mid = a + (e - a) / 2;
    if (key_at(mid) < t)
      a = mid + 1;
    else
      e = mid;
  }
  return a;
}
}  // namespace detail

inline constexpr std::size_t kSpanBlock = 32;
// The end of the last event of each block of kSpanBlock events (0.25 bytes per event); only
// meaningful for tracks whose ends are sorted.
template <typename Event>
std::vector<TimeNs> build_span_index(const std::vector<Event>& events) {
  std::vector<TimeNs> out;
  for (std::size_t b = 0; b < events.size(); b += kSpanBlock) out.push_back(events[std::min(events.size(), b + kSpanBlock) - 1].end);
  return out;
}

// For tracks whose ends are not sorted (overlapping events: collectives on an NCCL stream): the
// largest end in each block of kSpanBlock events (0.25 bytes per event). Folding then skips whole
// blocks whose largest end is before the time it looks for, instead of walking every event.
template <typename Event>
std::vector<TimeNs> build_block_max_index(const std::vector<Event>& events) {
  std::vector<TimeNs> out;
  for (std::size_t b = 0; b < events.size(); b += kSpanBlock) {
    TimeNs m = events[b].end;
    for (std::size_t i = b; i < std::min(events.size(), b + kSpanBlock); ++i) m = std::max(m, events[i].end);
    out.push_back(m);
  }
  return out;
}

// The folding rule (the spec the brute-force test re-implements):
//  - visible events are those whose [start, end] meets the window, in start order;
//  - an event at least `min_px` wide is its own box;
//  - a narrower one opens a run ending at its end E. The run absorbs each following event whose
//    end is before E + min_px (in time); then, if the next event ends less than 2 * min_px past
//    E, it is absorbed too, E moves to its end and the search repeats with E + min_px. A run stops
//    at the first event that starts after the window. The run is one box from the first start to
//    the last E.
template <typename Event>
void build_span_items(const std::vector<Event>& events, TimeNs max_duration, bool sorted_ends, const Viewport& vp,
                      std::vector<SpanItem>& out, double min_px = kMinVisiblePx,
                      const std::vector<TimeNs>* block_ends = nullptr) {
  // block_ends: build_span_index when sorted_ends, build_block_max_index otherwise.
  const std::size_t n = events.size();
  if (n == 0) return;
  const double t0 = vp.start_ns, t1 = vp.end_ns(), nspp = vp.ns_per_px, min_ns = min_px * nspp;
  const auto lo = static_cast<TimeNs>(t0) - max_duration - 1;
  std::size_t i = static_cast<std::size_t>(
      std::lower_bound(events.begin(), events.end(), lo, [](const Event& e, TimeNs t) { return e.start < t; }) -
      events.begin());
  // First index >= from whose end is >= t. The target is usually a few pixels ahead, so gallop
  // (1, 2, 4, ... events) before the binary search: it touches memory near `from` only, where a
  // plain binary search over the rest of a 10M-event track misses the cache ~20 times.
  auto advance_to_end_at_least = [&](std::size_t from, double t) {
    auto end_before = [&](std::size_t k) { return static_cast<double>(events[k].end) < t; };
    if (!sorted_ends) {
      if (!block_ends) {
        while (from < n && end_before(from)) ++from;
        return from;
      }
      // block_ends holds each block's largest end (build_block_max_index): walk to the end of
      // from's block, skip blocks ending wholly before t, walk inside the block found.
      const std::vector<TimeNs>& bmax = *block_ends;
      while (from < n && from % kSpanBlock && end_before(from)) ++from;
      if (from >= n || !end_before(from)) return from;
      std::size_t b = from / kSpanBlock;
      while (b < bmax.size() && static_cast<double>(bmax[b]) < t) ++b;
      from = std::max(from, b * kSpanBlock);
      while (from < n && end_before(from)) ++from;
      return from;
    }
    if (from >= n || !end_before(from)) return from;
    if (block_ends)
      return detail::blocked_lower_bound(from, n, t, *block_ends, kSpanBlock,
                                         [&](std::size_t k) { return static_cast<double>(events[k].end); });
    return detail::gallop_past(from, n, end_before);  // end_before(from) holds
  };
  while (i < n && static_cast<double>(events[i].start) <= t1) {
    const Event& e = events[i];
    if (static_cast<double>(e.end) < t0) {
      ++i;
      continue;
    }
    const double x0 = vp.x_of(static_cast<double>(e.start));
    const double x1 = vp.x_of(static_cast<double>(e.end));
    if (x1 - x0 >= min_px) {
      out.push_back({detail::clamp_x(x0, vp.width_px), detail::clamp_x(x1, vp.width_px), static_cast<std::uint32_t>(i), 1});
      ++i;
      continue;
    }
    const std::size_t first = i;
    double run_end = static_cast<double>(e.end);
    double next_time = run_end + min_ns;
    ++i;
    for (;;) {
      i = advance_to_end_at_least(i, next_time);
      if (i >= n || static_cast<double>(events[i].start) > t1) break;
      const double next_end = static_cast<double>(events[i].end);
      if (vp.x_of(next_end) - vp.x_of(run_end) >= 2 * min_px) break;
      run_end = std::max(run_end, next_end);
      ++i;
      next_time = run_end + min_ns;
    }
    out.push_back({detail::clamp_x(x0, vp.width_px), detail::clamp_x(vp.x_of(run_end), vp.width_px),
                   static_cast<std::uint32_t>(first), static_cast<std::uint32_t>(i - first)});
  }
}

// Block minima and maxima of a counter (blocks of 32 and of 1024 points, under 1 byte per
// point), so that a pixel column spanning many points costs a few block reads, not a scan.
//
// Level of detail (as span_lod.h for event tracks): the points are also bucketed by time, in
// buckets of 2^shift ns holding about kPointsPerBucket points, with the first point of each bucket
// and the minimum and maximum of each bucket, of each 8 buckets, and so on. When a pixel column
// spans at least two buckets, its end is found in one bucket's points instead of by a search, and
// its whole buckets are a few reads of the summaries: the bars are the same, the points read are
// those of the buckets at the column's ends.
struct CounterIndex {
  static constexpr std::size_t kSmall = 32, kLarge = 1024;
  std::vector<std::int64_t> small_min, small_max, large_min, large_max;
  std::vector<TimeNs> small_last_time;  // time of each small block's last point (for searching)

  static constexpr std::size_t kPointsPerBucket = 16, kBucketFan = 8;
  struct MinMax {
    std::int64_t min = std::numeric_limits<std::int64_t>::max(), max = std::numeric_limits<std::int64_t>::lowest();  // empty
  };
  TimeNs origin = 0;  // the first point's time
  int shift = 0;
  double width = 1;                                 // 2^shift
  std::vector<std::uint32_t> bucket_first;          // per bucket boundary: the first point at or after it
  std::vector<std::vector<MinMax>> bucket_minmax;   // per bucket, per 8 buckets, ...

  bool buckets_apply(double ns_per_px) const { return !bucket_first.empty() && ns_per_px >= 2 * width; }
  std::size_t memory_bytes() const {
    std::size_t b = (small_min.capacity() + small_max.capacity() + large_min.capacity() + large_max.capacity() +
                     small_last_time.capacity()) * sizeof(std::int64_t) + bucket_first.capacity() * sizeof(std::uint32_t);
    for (const auto& level : bucket_minmax) b += level.capacity() * sizeof(MinMax);
    return b;
  }
};
CounterIndex build_counter_index(const std::vector<CounterPoint>& points);
// Min and max of points[a, b) (a < b).
std::pair<std::int64_t, std::int64_t> counter_range_minmax(const std::vector<CounterPoint>& points,
                                                           const CounterIndex& index, std::size_t a, std::size_t b);

// Step-function counter (value holds from one point to the next, and after the last) as one
// min/max bar per pixel column c, covering times [time_at(c), time_at(c + 1)). With an index the
// work per column is logarithmic (bounded, with its time buckets, when zoomed out); without, it is
// a scan of the visible points.
void build_counter_bars(const std::vector<CounterPoint>& points, const Viewport& vp, std::vector<CounterBar>& out,
                        const CounterIndex* index = nullptr);

// The box under x: among boxes whose extent [x0 - slack, max(x1, x0 + 1) + slack] holds x, the
// one nearest to x (distance 0 inside), the later one on ties; -1 when none. `items` must be in
// build order (x0 non-decreasing); `max_width` is the widest box's width (bounds the search).
int hit_test(const std::vector<SpanItem>& items, float x, float slack, float max_width);
float max_item_width(const std::vector<SpanItem>& items);

}  // namespace ss::timeline
