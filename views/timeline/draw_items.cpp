#include "views/timeline/draw_items.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace ss::timeline {

CounterIndex build_counter_index(const std::vector<CounterPoint>& points) {
  CounterIndex ix;
  const std::size_t n = points.size();
  for (std::size_t b = 0; b < n; b += CounterIndex::kSmall) {
    std::int64_t lo = points[b].value, hi = lo;
    for (std::size_t i = b; i < std::min(n, b + CounterIndex::kSmall); ++i) {
      lo = std::min(lo, points[i].value);
      hi = std::max(hi, points[i].value);
    }
    ix.small_min.push_back(lo);
    ix.small_max.push_back(hi);
    ix.small_last_time.push_back(points[std::min(n, b + CounterIndex::kSmall) - 1].time);
  }
  constexpr std::size_t per = CounterIndex::kLarge / CounterIndex::kSmall;
  for (std::size_t b = 0; b < ix.small_min.size(); b += per) {
    std::int64_t lo = ix.small_min[b], hi = ix.small_max[b];
    for (std::size_t i = b; i < std::min(ix.small_min.size(), b + per); ++i) {
      lo = std::min(lo, ix.small_min[i]);
      hi = std::max(hi, ix.small_max[i]);
    }
    ix.large_min.push_back(lo);
    ix.large_max.push_back(hi);
  }
  // Time buckets: the smallest power of two holding at most kPointsPerBucket points on average.
  if (n == 0) return ix;
  ix.origin = points.front().time;
  const auto span = static_cast<std::uint64_t>(points.back().time - ix.origin) + 1;
  // span * fill may not fit in 64 bits: a span may be 2^62 ns (storage/value_bounds.h), and the
  // product once wrapped to a tiny bucket width and ~2^62 buckets (std::length_error in the app).
  // Then round up from span / n; no bucket need be wider than the span (n <= fill: one bucket).
  constexpr std::uint64_t fill = CounterIndex::kPointsPerBucket;
  const std::uint64_t per_bucket = span <= UINT64_MAX / fill ? (span * fill + n - 1) / n
                                   : n <= fill               ? span
                                                             : std::min(span, (span / n + 1) * fill);
  ix.shift = static_cast<int>(std::bit_width(std::max<std::uint64_t>(1, per_bucket) - 1));
  ix.width = std::ldexp(1.0, ix.shift);
  const std::size_t buckets = static_cast<std::size_t>((span - 1) >> ix.shift) + 1;  // the last point is in the last one
  ix.bucket_first.resize(buckets + 1);
  std::vector<CounterIndex::MinMax> level(buckets);
  std::size_t k = 0;
  for (std::size_t b = 0; b < buckets; ++b) {
    ix.bucket_first[b] = static_cast<std::uint32_t>(k);
    // Offsets from the first point, unsigned: (b + 1) << shift passes 2^63 on a span near 2^62.
    const std::uint64_t end = static_cast<std::uint64_t>(b + 1) << ix.shift;
    for (; k < n && static_cast<std::uint64_t>(points[k].time - ix.origin) < end; ++k) {
      level[b].min = std::min(level[b].min, points[k].value);
      level[b].max = std::max(level[b].max, points[k].value);
    }
  }
  ix.bucket_first[buckets] = static_cast<std::uint32_t>(n);
  ix.bucket_minmax.push_back(std::move(level));
  while (ix.bucket_minmax.back().size() > CounterIndex::kBucketFan) {
    const auto& below = ix.bucket_minmax.back();
    std::vector<CounterIndex::MinMax> up((below.size() + CounterIndex::kBucketFan - 1) / CounterIndex::kBucketFan);
    for (std::size_t b = 0; b < below.size(); ++b) {
      auto& u = up[b / CounterIndex::kBucketFan];
      u.min = std::min(u.min, below[b].min);
      u.max = std::max(u.max, below[b].max);
    }
    ix.bucket_minmax.push_back(std::move(up));
  }
  return ix;
}

namespace {
std::size_t bucket_of(const CounterIndex& ix, TimeNs t) { return static_cast<std::size_t>((t - ix.origin) >> ix.shift); }

// The first point whose time is at least t, from the bucket holding t: a scan of its points, or a
// binary search in a bucket of a burst.
std::size_t first_at_or_after(const std::vector<CounterPoint>& points, const CounterIndex& ix, double t) {
  const double x = (t - static_cast<double>(ix.origin)) / ix.width;
  if (!(x > 0)) return 0;  // t at or before the first point
  const std::size_t buckets = ix.bucket_first.size() - 1;
  if (x >= static_cast<double>(buckets)) return points.size();
  const auto b = static_cast<std::size_t>(x);
  std::size_t a = ix.bucket_first[b];
  const std::size_t e = ix.bucket_first[b + 1];
  if (e - a > 16)
    return static_cast<std::size_t>(std::lower_bound(points.begin() + static_cast<std::ptrdiff_t>(a), points.begin() + static_cast<std::ptrdiff_t>(e), t,
                                                     [](const CounterPoint& p, double v) { return static_cast<double>(p.time) < v; }) -
                                    points.begin());
  while (a < e && static_cast<double>(points[a].time) < t) ++a;
  return a;
}

// Min and max of points[a, b) (a < b): the partial buckets at either end from the blocks, the
// whole buckets between from the bucket summaries (up the levels where aligned, kBucketFan
// entries at most per level and side).
std::pair<std::int64_t, std::int64_t> bucket_range_minmax(const std::vector<CounterPoint>& points, const CounterIndex& ix,
                                                          std::size_t a, std::size_t b) {
  const std::size_t ba = bucket_of(ix, points[a].time), bb = bucket_of(ix, points[b - 1].time);
  if (ba == bb) return counter_range_minmax(points, ix, a, b);
  auto [lo, hi] = counter_range_minmax(points, ix, a, ix.bucket_first[ba + 1]);
  const auto right = counter_range_minmax(points, ix, ix.bucket_first[bb], b);
  lo = std::min(lo, right.first);
  hi = std::max(hi, right.second);
  auto take = [&](const CounterIndex::MinMax& m) {
    lo = std::min(lo, m.min);
    hi = std::max(hi, m.max);
  };
  constexpr std::size_t F = CounterIndex::kBucketFan;
  std::size_t l = ba + 1, r = bb;  // whole buckets [l, r) at level L
  for (std::size_t L = 0; l < r; ++L) {
    const auto& level = ix.bucket_minmax[L];
    if (L + 1 == ix.bucket_minmax.size()) {
      for (; l < r; ++l) take(level[l]);
      break;
    }
    for (; l < r && l % F; ++l) take(level[l]);
    for (; l < r && r % F; --r) take(level[r - 1]);
    l /= F;
    r /= F;
  }
  return {lo, hi};
}
}  // namespace

std::pair<std::int64_t, std::int64_t> counter_range_minmax(const std::vector<CounterPoint>& points,
                                                           const CounterIndex& ix, std::size_t a, std::size_t b) {
  constexpr std::size_t S = CounterIndex::kSmall, L = CounterIndex::kLarge;
  std::int64_t lo = points[a].value, hi = lo;
  auto take = [&](std::int64_t mn, std::int64_t mx) {
    lo = std::min(lo, mn);
    hi = std::max(hi, mx);
  };
  std::size_t i = a;
  while (i < b && i % S) take(points[i].value, points[i].value), ++i;
  while (i + S <= b && i % L) take(ix.small_min[i / S], ix.small_max[i / S]), i += S;
  while (i + L <= b) take(ix.large_min[i / L], ix.large_max[i / L]), i += L;
  while (i + S <= b) take(ix.small_min[i / S], ix.small_max[i / S]), i += S;
  while (i < b) take(points[i].value, points[i].value), ++i;
  return {lo, hi};
}

void build_counter_bars(const std::vector<CounterPoint>& points, const Viewport& vp, std::vector<CounterBar>& out,
                        const CounterIndex* index) {
  if (points.empty()) return;
  const int columns = static_cast<int>(std::ceil(vp.width_px));
  const bool by_bucket = index && index->buckets_apply(vp.ns_per_px);
  // Last point at or before the first column's start: its value is carried into the window.
  const double t_first = vp.time_at(0);
  auto it = std::upper_bound(points.begin(), points.end(), t_first,
                             [](double t, const CounterPoint& p) { return t < static_cast<double>(p.time); });
  bool have = it != points.begin();
  std::int64_t current = have ? std::prev(it)->value : 0;
  for (int c = 0; c < columns; ++c) {
    const double col_end = vp.time_at(c + 1);
    std::int64_t lo = current, hi = current;
    bool any = have;
    // Points inside the column: [it, stop).
    auto stop = it;
    if (by_bucket) {
      stop = points.begin() + static_cast<std::ptrdiff_t>(std::max(static_cast<std::size_t>(it - points.begin()), first_at_or_after(points, *index, col_end)));
    } else if (index) {
      const std::size_t k = detail::blocked_lower_bound(
          static_cast<std::size_t>(it - points.begin()), points.size(), col_end, index->small_last_time, CounterIndex::kSmall,
          [&](std::size_t i) { return static_cast<double>(points[i].time); });
      stop = points.begin() + static_cast<std::ptrdiff_t>(k);
    }
    else
      while (stop != points.end() && static_cast<double>(stop->time) < col_end) ++stop;
    if (stop != it) {
      const auto a = static_cast<std::size_t>(it - points.begin()), b = static_cast<std::size_t>(stop - points.begin());
      const auto [mn, mx] = by_bucket ? bucket_range_minmax(points, *index, a, b)
                            : index   ? counter_range_minmax(points, *index, a, b)
                                  : [&] {
                                      std::int64_t mn0 = it->value, mx0 = it->value;
                                      for (auto k = it; k != stop; ++k) mn0 = std::min(mn0, k->value), mx0 = std::max(mx0, k->value);
                                      return std::pair{mn0, mx0};
                                    }();
      lo = any ? std::min(lo, mn) : mn;
      hi = any ? std::max(hi, mx) : mx;
      any = true;
      current = std::prev(stop)->value;
      it = stop;
    }
    have = any;
    if (any) out.push_back({static_cast<float>(c), lo, hi});
    if (it == points.end() && !have) break;
  }
}

float max_item_width(const std::vector<SpanItem>& items) {
  float w = 1;
  for (const auto& s : items) w = std::max(w, s.x1 - s.x0);
  return w;
}

int hit_test(const std::vector<SpanItem>& items, float x, float slack, float max_width) {
  // Boxes starting after x + slack cannot hold x; walk back from there until boxes are too far
  // left for even the widest one to reach x.
  auto end = std::upper_bound(items.begin(), items.end(), x + slack, [](float v, const SpanItem& s) { return v < s.x0; });
  int best = -1;
  float best_distance = 0;
  for (auto it = end; it != items.begin();) {
    --it;
    if (it->x0 + std::max(max_width, 1.0f) + slack < x) break;
    const float right = std::max(it->x1, it->x0 + 1.0f);
    if (x < it->x0 - slack || x > right + slack) continue;
    const float distance = x < it->x0 ? it->x0 - x : (x > right ? x - right : 0.0f);
    if (best < 0 || distance < best_distance) {
      best = static_cast<int>(it - items.begin());
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace ss::timeline
