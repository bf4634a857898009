#include "views/timeline/draw_items.h"

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
  return ix;
}

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
    if (index) {
      const std::size_t k = detail::blocked_lower_bound(
          static_cast<std::size_t>(it - points.begin()), points.size(), col_end, index->small_last_time, CounterIndex::kSmall,
          [&](std::size_t i) { return static_cast<double>(points[i].time); });
      stop = points.begin() + static_cast<std::ptrdiff_t>(k);
    }
    else
      while (stop != points.end() && static_cast<double>(stop->time) < col_end) ++stop;
    if (stop != it) {
      const auto [mn, mx] = index ? counter_range_minmax(points, *index, static_cast<std::size_t>(it - points.begin()),
                                                         static_cast<std::size_t>(stop - points.begin()))
                                  : [&] {
                                      std::int64_t a = it->value, b = it->value;
                                      for (auto k = it; k != stop; ++k) a = std::min(a, k->value), b = std::max(b, k->value);
                                      return std::pair{a, b};
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
