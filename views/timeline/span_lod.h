// Level-of-detail summaries of one event track, built once when the timeline indexes its tracks,
// so that a zoomed-out frame reads a few compact arrays per pixel column instead of the events
// under it (Perfetto's slice mipmaps and Nsight's utilisation rows, research/gui.md §2.3-2.4).
// They exist for tracks whose events end in start order (ends_sorted: a CUDA stream, one nesting
// depth of ranges), which is nearly every track.
//
//  - GapTree: the largest gap between consecutive ends per block of 32 events, per 32 blocks, and
//    so on. Folding (draw_items.h) can only break a run where an end follows the one before it by
//    at least min_px, so a run across a million events costs a walk down the tree, not a walk
//    through the events.
//  - CoverLod: the covered time (the measure of the union of the events, as density.h) at every
//    boundary of buckets of 2^shift ns, between a half and one bucket per event, in 2 bytes each,
//    and at buckets 16 and 256 times as wide, and so on. A pixel column is two interpolations in
//    the coarsest level with at least kLodBucketsPerPx buckets per pixel: the error is under 1/16
//    of the column (one of the 16 shading levels), see CoverLod::covered_before.
//
// What the level-of-detail path draws, against the exact path (draw_items.h, density.h):
//  - the same items in the same order, with the same first event, x0 and count; a single event
//    (count 1) has the same x1;
//  - a fold's box ends at its last event's end (the exact path ends it at the last end that
//    extended the run, up to min_px earlier; shaded tracks do not draw fold boxes);
//  - the fold that runs past the right edge of the view stops at the last event starting inside
//    it (the exact path may also count events beyond the edge that end within min_px of the run);
//  - density: the same columns (a column is shaded exactly when events cover part of it), each
//    within 1/16 of the exact covered fraction.
// The work per frame is a few reads per pixel column and per run, whatever the number of events.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "views/timeline/density.h"
#include "views/timeline/draw_items.h"

namespace ss::timeline {

// Largest gap between consecutive ends. levels[L][b] covers events [b * 32^(L+1), (b+1) * 32^(L+1));
// the gap at event j >= 1 is end[j] - end[j-1]; the top level has at most kFan entries.
struct GapTree {
  static constexpr std::size_t kFan = 32;
  std::vector<std::vector<TimeNs>> levels;
  std::size_t memory_bytes() const {
    std::size_t b = levels.capacity() * sizeof(levels[0]);
    for (const auto& l : levels) b += l.capacity() * sizeof(TimeNs);
    return b;
  }
};

// The levels above the first (GapTree::levels[0], filled by build_span_lod).
inline void build_gap_levels(GapTree& g) {
  constexpr std::size_t F = GapTree::kFan;
  while (g.levels.back().size() > F) {
    const std::vector<TimeNs>& below = g.levels.back();
    std::vector<TimeNs> up((below.size() + F - 1) / F, std::numeric_limits<TimeNs>::lowest());
    for (std::size_t b = 0; b < below.size(); ++b) up[b / F] = std::max(up[b / F], below[b]);
    g.levels.push_back(std::move(up));
  }
}

// The first j in [pos, hi) whose gap end[j] - end[j-1] is at least `at_least`, or hi. Skips
// blocks whose largest gap is smaller, climbing to bigger blocks where they are aligned: at most
// kFan steps per level up and down, plus the events of the block where it lands.
template <typename Events>
std::size_t next_gap_at_least(const Events& ev, const GapTree& g, std::size_t pos, std::size_t hi, double at_least) {
  constexpr std::size_t F = GapTree::kFan;
  auto gap = [&](std::size_t j) { return static_cast<double>(ev[j].end - ev[j - 1].end); };
  std::size_t j = std::max<std::size_t>(pos, 1);
  while (j < hi) {
    if (j % F) {
      if (gap(j) >= at_least) return j;
      ++j;
      continue;
    }
    if (static_cast<double>(g.levels[0][j / F]) >= at_least) {  // it is in this block, or past hi
      for (const std::size_t e = std::min(hi, j + F); j < e; ++j)
        if (gap(j) >= at_least) return j;
      continue;
    }
    std::size_t size = F;
    for (std::size_t L = 1; L < g.levels.size() && j % (size * F) == 0 && static_cast<double>(g.levels[L][j / (size * F)]) < at_least; ++L)
      size *= F;
    j += size;
  }
  return hi;
}

// Covered time at bucket boundaries, at bucket widths 2^shift, 16 * 2^shift, 256 * 2^shift, ...
// (coarser levels keep a zoomed-out frame's reads within a few pages of memory). At each level,
// boundary b is at origin + b * width, stored as the exact covered time before every kGroup-th
// boundary plus, per boundary, the covered time since then in units of 1/256 of a bucket
// (rounded: an error under 1/512 of a bucket). Plus one bit per finest bucket: some event covers
// part of it.
struct CoverLod {
  static constexpr std::size_t kGroup = 256;   // 255 buckets of 256 units fit a uint16
  static constexpr int kLevelShift = 4;        // each level's buckets are 16 of the level below
  struct Level {
    int shift = 0;
    double width = 1;  // 2^shift ns
    std::vector<TimeNs> group_base;
    std::vector<std::uint16_t> within;  // buckets + 1 boundaries
    double covered_at(std::size_t b) const { return static_cast<double>(group_base[b / kGroup]) + within[b] * (width / 256); }
  };
  TimeNs origin = 0;
  std::vector<Level> levels;           // finest first
  std::vector<std::uint64_t> occupied;  // per finest bucket

  bool empty() const { return levels.empty(); }
  double bucket_ns() const { return levels.empty() ? 1 : levels[0].width; }
  // The coarsest level whose buckets are at most 1/per_px of a pixel (the finest if none is).
  const Level& level_for(double ns_per_px, double per_px) const {
    std::size_t L = 0;
    while (L + 1 < levels.size() && levels[L + 1].width * per_px <= ns_per_px) ++L;
    return levels[L];
  }
  // Covered time before t. Inside a bucket the covered time rises by its bucket's share at a slope
  // between 0 and 1, so the linear interpolation is off by at most a quarter of a bucket.
  double covered_before(const Level& lv, double t) const {
    const double x = (t - static_cast<double>(origin)) / lv.width;
    if (x <= 0) return 0;
    const std::size_t nb = lv.within.size() - 1;
    if (x >= static_cast<double>(nb)) return lv.covered_at(nb);
    const auto b = static_cast<std::size_t>(x);
    const double a = lv.covered_at(b);
    return a + (x - static_cast<double>(b)) * (lv.covered_at(b + 1) - a);
  }
  // False when no event covers any part of [t0, t1) (a word of the bitmap per 64 buckets).
  bool any_occupied(double t0, double t1) const {
    const double o = static_cast<double>(origin), w = levels[0].width;
    const double lo = std::max(0.0, std::floor((t0 - o) / w)), hi = std::min(static_cast<double>(levels[0].within.size() - 1), std::ceil((t1 - o) / w));
    if (!(lo < hi)) return false;
    const auto b0 = static_cast<std::size_t>(lo), b1 = static_cast<std::size_t>(hi);  // buckets [b0, b1)
    for (std::size_t word = b0 / 64; word <= (b1 - 1) / 64; ++word) {
      std::uint64_t bits = occupied[word];
      if (word == b0 / 64) bits &= ~std::uint64_t{0} << (b0 % 64);
      if (word == (b1 - 1) / 64 && b1 % 64) bits &= ~(~std::uint64_t{0} << (b1 % 64));
      if (bits) return true;
    }
    return false;
  }
  std::size_t memory_bytes() const {
    std::size_t b = occupied.capacity() * sizeof(std::uint64_t) + levels.capacity() * sizeof(Level);
    for (const Level& lv : levels) b += lv.group_base.capacity() * sizeof(TimeNs) + lv.within.capacity() * sizeof(std::uint16_t);
    return b;
  }
};

inline constexpr double kLodBucketsPerPx = 8;  // the coverage error is then under 1/16 of a column

struct SpanLod {
  GapTree gaps;
  CoverLod cover;
  bool empty() const { return cover.empty(); }
  // True when a view at this scale is drawn from the summaries.
  bool applies(double ns_per_px) const { return !empty() && ns_per_px >= kLodBucketsPerPx * cover.bucket_ns(); }
  std::size_t memory_bytes() const { return gaps.memory_bytes() + cover.memory_bytes(); }
};

// For a track sorted by start whose ends are sorted too (empty otherwise), in one pass over the
// events. The bucket is the smallest power of two that gives at most one bucket per event over the
// track's span.
template <typename Events>
SpanLod build_span_lod(const Events& ev, bool sorted_ends) {
  SpanLod lod;
  const std::size_t n = ev.size();
  if (!sorted_ends || n == 0) return lod;
  constexpr std::size_t F = GapTree::kFan;
  std::vector<TimeNs> gaps((n + F - 1) / F, std::numeric_limits<TimeNs>::lowest());
  CoverLod& c = lod.cover;
  c.origin = ev[0].start;
  const auto span = static_cast<std::uint64_t>(std::max<TimeNs>(1, ev[n - 1].end - c.origin));
  const std::uint64_t per_event = (span + n - 1) / n;
  const int shift0 = static_cast<int>(std::bit_width(std::max<std::uint64_t>(1, per_event) - 1));  // 2^shift0 >= per_event
  const TimeNs w = TimeNs{1} << shift0;
  const auto nb = static_cast<std::size_t>((span + static_cast<std::uint64_t>(w) - 1) >> shift0);
  for (std::size_t buckets = nb, L = 0; L == 0 || buckets > 64; buckets = (buckets + 15) >> CoverLod::kLevelShift, ++L) {
    CoverLod::Level lv;
    lv.shift = shift0 + static_cast<int>(L) * CoverLod::kLevelShift;
    lv.width = std::ldexp(1.0, lv.shift);
    lv.within.resize(buckets + 1);
    lv.group_base.resize(buckets / CoverLod::kGroup + 1);
    c.levels.push_back(std::move(lv));
  }
  c.occupied.assign(nb / 64 + 1, 0);
  TimeNs covered = 0, until = std::numeric_limits<TimeNs>::lowest(), prev_at = 0;
  std::size_t b = 0;      // the next finest boundary: the events before the current one start before it
  TimeNs t = c.origin;    // its time
  auto store = [](CoverLod::Level& lv, std::size_t at_b, TimeNs at) {
    if (at_b % CoverLod::kGroup == 0) lv.group_base[at_b / CoverLod::kGroup] = at;
    const TimeNs d = at - lv.group_base[at_b / CoverLod::kGroup];  // in units of 2^(shift - 8) ns, rounded
    lv.within[at_b] = static_cast<std::uint16_t>(lv.shift > 8 ? (d + (TimeNs{1} << (lv.shift - 9))) >> (lv.shift - 8) : d << (8 - lv.shift));
  };
  auto boundary = [&] {   // covered time at boundary b; bucket b - 1 is occupied when it grew
    const TimeNs at = covered - (until > t ? until - t : 0);
    store(c.levels[0], b, at);
    for (std::size_t L = 1, m = b; L < c.levels.size() && m % 16 == 0 && (m >> CoverLod::kLevelShift) < c.levels[L].within.size(); ++L) {
      m >>= CoverLod::kLevelShift;
      store(c.levels[L], m, at);
    }
    if (at > prev_at) c.occupied[(b - 1) / 64] |= std::uint64_t{1} << ((b - 1) % 64);
    prev_at = at;
    ++b;
    t += w;
  };
  TimeNs prev_end = ev[0].end;
  for (std::size_t k = 0; k < n; ++k) {
    const TimeNs start = ev[k].start, end = ev[k].end;
    while (b <= nb && t <= start) boundary();
    if (k > 0) gaps[k / F] = std::max(gaps[k / F], end - prev_end);
    prev_end = end;
    detail::cover_step(start, end, covered, until);
  }
  while (b <= nb) boundary();
  // A coarser level's last boundary may lie past the finest one's: the coverage is complete there.
  for (CoverLod::Level& lv : c.levels)
    for (std::size_t k = (nb >> (lv.shift - shift0)) + 1; k < lv.within.size(); ++k) store(lv, k, covered);
  lod.gaps.levels.push_back(std::move(gaps));
  build_gap_levels(lod.gaps);
  return lod;
}

// build_span_items from the summaries (the differences are listed at the top). `block_ends` is
// build_span_index(events).
template <typename Events>
void build_span_items_lod(const Events& ev, const SpanLod& lod, const std::vector<TimeNs>& block_ends, const Viewport& vp,
                          std::vector<SpanItem>& out, double min_px = kMinVisiblePx) {
  const std::size_t n = ev.size();
  if (n == 0) return;
  const double t0 = vp.start_ns, t1 = vp.end_ns(), min_ns = min_px * vp.ns_per_px;
  auto start_of = [&](std::size_t k) { return static_cast<double>(ev[k].start); };
  auto end_of = [&](std::size_t k) { return static_cast<double>(ev[k].end); };
  // The events drawn: [i, hi), from the first ending at or after t0 to the last starting by t1.
  std::size_t i = detail::blocked_lower_bound(0, n, t0, block_ends, kSpanBlock, end_of);
  std::size_t hi = n;
  if (start_of(n - 1) > t1) {
    std::size_t a = i, b = n - 1;  // start_of(b) > t1
    while (a < b) {
      const std::size_t mid = a + (b - a) / 2;
      if (start_of(mid) > t1)
        b = mid;
      else
        a = mid + 1;
    }
    hi = a;
  }
  // A gap below `lo_gap` never breaks a run, one of `hi_gap` or more always does (the run's last
  // absorbing end is at most the end before the gap); the guard covers the rounding of doubles.
  const double guard = 1e-3 * min_ns + 16 * std::ldexp(std::max({1.0, std::abs(t0), std::abs(t1)}), -52);
  const double lo_gap = min_ns - guard, hi_gap = 2 * min_ns + guard;
  while (i < hi) {
    const double x0 = vp.x_of(start_of(i)), x1 = vp.x_of(end_of(i));
    if (x1 - x0 >= min_px) {
      out.push_back({detail::clamp_x(x0, vp.width_px), detail::clamp_x(x1, vp.width_px), static_cast<std::uint32_t>(i), 1});
      ++i;
      continue;
    }
    const std::size_t first = i;
    // The exact walk's state (run_end, and where its next search starts) is known at the run's
    // start and after each gap it walked through; in between, the run skips stretches without a
    // gap that could break it. Only a gap between lo_gap and hi_gap needs the walk.
    double run_end = end_of(i);
    std::size_t walk = i + 1, pos = i + 1, stop = hi;
    for (;;) {
      const std::size_t j = next_gap_at_least(ev, lod.gaps, pos, hi, lo_gap);
      if (j >= hi) break;  // stop = hi
      if (end_of(j) - end_of(j - 1) >= hi_gap) {
        stop = j;
        break;
      }
      bool broke = false;
      for (;;) {  // draw_items.h's walk, from its known state to just past j
        std::size_t k = walk;
        if (k < n && end_of(k) < run_end + min_ns)
          k = detail::blocked_lower_bound(k, n, run_end + min_ns, block_ends, kSpanBlock, end_of);
        if (k >= n || start_of(k) > t1 || vp.x_of(end_of(k)) - vp.x_of(run_end) >= 2 * min_px) {
          stop = k;
          broke = true;
          break;
        }
        run_end = std::max(run_end, end_of(k));
        walk = k + 1;
        if (k >= j) break;
      }
      if (broke) break;
      pos = walk;
    }
    out.push_back({detail::clamp_x(x0, vp.width_px), detail::clamp_x(vp.x_of(end_of(stop - 1)), vp.width_px),
                   static_cast<std::uint32_t>(first), static_cast<std::uint32_t>(stop - first)});
    i = stop;
  }
}

namespace detail {
// True when an event covers part of [t0, t1): the first event ending after t0 (ends sorted;
// `cursor` only moves forward, so calls must come in time order) starts before t1 and has a length.
template <typename Events>
bool any_event_covers(const Events& ev, const std::vector<TimeNs>& block_ends, std::size_t& cursor, double t0, double t1) {
  const std::size_t n = ev.size();
  cursor = blocked_lower_bound(cursor, n, std::floor(t0) + 1, block_ends, kSpanBlock,
                               [&](std::size_t k) { return static_cast<double>(ev[k].end); });
  for (std::size_t k = cursor; k < n && static_cast<double>(ev[k].start) < t1; ++k)
    if (ev[k].start < ev[k].end) return true;
  return false;
}
}  // namespace detail

// build_density from the coverage summary: the columns of the folds in `items` (from
// build_span_items_lod), each from two interpolated covered times. A column whose estimate is
// under kCheckBelow is looked up in the events, so that shading appears exactly where events are.
template <typename Events>
void build_density_lod(const Events& ev, const SpanLod& lod, const std::vector<TimeNs>& block_ends,
                       const std::vector<SpanItem>& items, const Viewport& vp, std::vector<DensityColumn>& out) {
  constexpr double kCheckBelow = 1.0 / 8;  // twice the largest error
  const CoverLod& cover = lod.cover;
  if (ev.size() == 0 || cover.empty()) return;
  const CoverLod::Level& level = cover.level_for(vp.ns_per_px, kLodBucketsPerPx);
  int next_col = 0;
  double before = -1, before_t = 0;
  std::size_t cursor = 0;
  for (const SpanItem& s : items) {
    if (s.count <= 1) continue;
    const auto [c0, c1] = fold_columns(vp.x_of(static_cast<double>(ev[s.first].start)),
                                       std::max(vp.x_of(static_cast<double>(ev[s.first + s.count - 1].end)), static_cast<double>(s.x1)), next_col, vp);
    for (int c = c0; c < c1; ++c) {
      const double ta = vp.time_at(c), tb = vp.time_at(c + 1);
      const double a = before >= 0 && before_t == ta ? before : cover.covered_before(level, ta);
      const double b = cover.covered_before(level, tb);
      before = b;
      before_t = tb;
      double f = std::clamp((b - a) / vp.ns_per_px, 0.0, 1.0);
      if (f < kCheckBelow) {
        if (!cover.any_occupied(ta, tb) || !detail::any_event_covers(ev, block_ends, cursor, ta, tb)) continue;
        f = std::max(f, 1e-6);
      }
      out.push_back({static_cast<float>(c), static_cast<float>(f)});
    }
    next_col = std::max(next_col, c1);
  }
}

// One stream or range track's boxes and density: from the summaries when the view is zoomed out
// far enough for them (SpanLod::applies), otherwise from the events (draw_items.h, density.h).
// `block_ends` is the track's build_span_index, or build_block_max_index when its ends are not
// sorted (then `lod` is empty).
template <typename Event>
void build_span_track(const std::vector<Event>& events, TimeNs max_duration, bool sorted_ends, const std::vector<TimeNs>& block_ends,
                      const CoverIndex& cover, const SpanLod& lod, const Viewport& vp, std::vector<SpanItem>& spans,
                      std::vector<DensityColumn>& density) {
  if (lod.applies(vp.ns_per_px)) {
    build_span_items_lod(events, lod, block_ends, vp, spans);
    build_density_lod(events, lod, block_ends, spans, vp, density);
    return;
  }
  build_span_items(events, max_duration, sorted_ends, vp, spans, kMinVisiblePx, block_ends.empty() ? nullptr : &block_ends);
  build_density(events, cover, spans, vp, density);
}

}  // namespace ss::timeline
