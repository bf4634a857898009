// The timeline's pure logic against brute-force references: culling + folding, counter bars,
// hit-testing, the viewport math, range aggregation, find and collective peers.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <random>
#include <set>

#include "profiler/synthetic/synthetic_profile.h"
#include "storage/profile_reader.h"
#include "tests/support/test_paths.h"
#include "tests/views/lod_compare.h"
#include "views/timeline/analysis.h"
#include "views/timeline/density.h"
#include "views/timeline/draw_items.h"
#include "views/timeline/label_layout.h"
#include "views/timeline/span_lod.h"
#include "views/timeline/time_format.h"
#include "views/timeline/timeline_controller.h"

using namespace ss;
using namespace ss::timeline;

namespace {

struct Ev {
  TimeNs start, end;
};

// Random track sorted by start. Without overlap, events follow each other with random gaps (a
// CUDA stream); with overlap, ends are unsorted.
std::vector<Ev> random_track(std::mt19937_64& rng, std::size_t n, bool overlap) {
  std::vector<Ev> ev;
  std::uniform_int_distribution<int> kind(0, 9);
  TimeNs t = 1000;
  for (std::size_t i = 0; i < n; ++i) {
    // Mostly tiny events with occasional long ones and long gaps: folding gets exercised.
    const int k = kind(rng);
    const TimeNs dur = k < 6 ? 1 + static_cast<TimeNs>(rng() % 50) : (k < 9 ? 100 + static_cast<TimeNs>(rng() % 2000) : 50000 + static_cast<TimeNs>(rng() % 200000));
    const TimeNs gap = k == 0 ? static_cast<TimeNs>(rng() % 100000) : static_cast<TimeNs>(rng() % 40);
    t += gap;
    ev.push_back({t, t + dur});
    t = overlap ? t + static_cast<TimeNs>(rng() % 30) : t + dur;
  }
  return ev;
}

TimeNs max_dur(const std::vector<Ev>& ev) {
  TimeNs m = 0;
  for (auto& e : ev) m = std::max(m, e.end - e.start);
  return m;
}

// The folding rule of draw_items.h, written as plainly as possible: a linear walk from the first
// event, no binary searches.
std::vector<SpanItem> reference_fold(const std::vector<Ev>& ev, const Viewport& vp, double min_px) {
  std::vector<SpanItem> out;
  const double t0 = vp.start_ns, t1 = vp.end_ns(), min_ns = min_px * vp.ns_per_px;
  std::size_t i = 0;
  const std::size_t n = ev.size();
  while (i < n) {
    if (static_cast<double>(ev[i].start) > t1) break;
    if (static_cast<double>(ev[i].end) < t0) {
      ++i;
      continue;
    }
    const double x0 = vp.x_of(static_cast<double>(ev[i].start)), x1 = vp.x_of(static_cast<double>(ev[i].end));
    if (x1 - x0 >= min_px) {
      out.push_back({detail::clamp_x(x0, vp.width_px), detail::clamp_x(x1, vp.width_px), static_cast<std::uint32_t>(i), 1});
      ++i;
      continue;
    }
    const std::size_t first = i;
    double run_end = static_cast<double>(ev[i].end), next_time = run_end + min_ns;
    ++i;
    while (true) {
      while (i < n && static_cast<double>(ev[i].end) < next_time) ++i;
      if (i >= n || static_cast<double>(ev[i].start) > t1) break;
      const double ne = static_cast<double>(ev[i].end);
      if (vp.x_of(ne) - vp.x_of(run_end) >= 2 * min_px) break;
      run_end = std::max(run_end, ne);
      ++i;
      next_time = run_end + min_ns;
    }
    out.push_back({detail::clamp_x(x0, vp.width_px), detail::clamp_x(vp.x_of(run_end), vp.width_px),
                   static_cast<std::uint32_t>(first), static_cast<std::uint32_t>(i - first)});
  }
  return out;
}

Viewport random_viewport(std::mt19937_64& rng, TimeNs t_begin, TimeNs t_end) {
  Viewport vp;
  vp.width_px = 200 + static_cast<double>(rng() % 1800);
  const double span = static_cast<double>(t_end - t_begin);
  const double zoom = std::pow(10.0, -static_cast<double>(rng() % 600) / 100.0);  // whole .. 1e-6 of it
  const double visible = std::max(10.0, span * zoom);
  const double start = static_cast<double>(t_begin) - visible * 0.1 + static_cast<double>(rng() % 1000) / 1000.0 * span;
  vp.fit(start, start + visible);
  return vp;
}

// Counter bars by brute force: per column, the value carried in from before it and every point
// inside it.
std::vector<CounterBar> reference_bars(const std::vector<CounterPoint>& pts, const Viewport& vp) {
  std::vector<CounterBar> slow;
  const int columns = static_cast<int>(std::ceil(vp.width_px));
  for (int c = 0; c < columns; ++c) {
    const double a = vp.time_at(c), b = vp.time_at(c + 1);
    bool any = false;
    std::int64_t lo = 0, hi = 0;
    auto take = [&](std::int64_t x) {
      lo = any ? std::min(lo, x) : x;
      hi = any ? std::max(hi, x) : x;
      any = true;
    };
    const CounterPoint* before = nullptr;
    for (const auto& p : pts)
      if (static_cast<double>(p.time) <= a) before = &p;
    if (before) take(before->value);
    for (const auto& p : pts)
      if (static_cast<double>(p.time) > a && static_cast<double>(p.time) < b) take(p.value);
    if (any) slow.push_back({static_cast<float>(c), lo, hi});
  }
  return slow;
}

}  // namespace

TEST_CASE("viewport zoom keeps the time under the cursor and pan moves by pixels", "[views][timeline]") {
  Viewport vp;
  vp.width_px = 1000;
  vp.fit(0, 1e6);
  REQUIRE(vp.ns_per_px == Approx(1000));
  const double anchor = vp.time_at(250);
  vp.zoom_around(250, 0.5);
  CHECK(vp.time_at(250) == Approx(anchor));
  CHECK(vp.ns_per_px == Approx(500));
  vp.pan_px(100);
  CHECK(vp.time_at(350) == Approx(anchor));
  vp.zoom_around(0, 1e-9);  // clamped
  CHECK(vp.ns_per_px == Approx(Viewport::kMinNsPerPx));
}

TEST_CASE("folding matches the brute-force reference on random tracks", "[views][timeline]") {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 300; ++trial) {
    const bool overlap = trial % 3 == 0;
    const auto ev = random_track(rng, 1 + rng() % 3000, overlap);
    const Viewport vp = random_viewport(rng, ev.front().start, ev.back().end);
    std::vector<SpanItem> fast, indexed;
    build_span_items(ev, max_dur(ev), ends_sorted(ev), vp, fast);
    const auto block_ends = ends_sorted(ev) ? build_span_index(ev) : build_block_max_index(ev);
    build_span_items(ev, max_dur(ev), ends_sorted(ev), vp, indexed, kMinVisiblePx, &block_ends);
    const auto slow = reference_fold(ev, vp, kMinVisiblePx);
    REQUIRE(indexed.size() == slow.size());
    for (std::size_t i = 0; i < indexed.size(); ++i) {
      REQUIRE(indexed[i].first == slow[i].first);
      REQUIRE(indexed[i].count == slow[i].count);
    }
    INFO("trial " << trial << " overlap " << overlap << " events " << ev.size() << " ns/px " << vp.ns_per_px);
    REQUIRE(fast.size() == slow.size());
    for (std::size_t i = 0; i < fast.size(); ++i) {
      REQUIRE(fast[i].first == slow[i].first);
      REQUIRE(fast[i].count == slow[i].count);
      REQUIRE(fast[i].x0 == slow[i].x0);
      REQUIRE(fast[i].x1 == slow[i].x1);
    }
    // Every visible event is drawn by exactly one item; narrow single boxes stay folded runs.
    std::size_t covered = 0;
    for (const auto& s : fast) covered += s.count;
    std::size_t visible = 0;
    for (const auto& e : ev)
      if (static_cast<double>(e.end) >= vp.start_ns && static_cast<double>(e.start) <= vp.end_ns()) ++visible;
    CHECK(covered >= visible);
  }
}

TEST_CASE("folding bounds the work by pixels, not events", "[views][timeline]") {
  std::mt19937_64 rng(7);
  std::vector<Ev> ev;
  TimeNs t = 0;
  for (int i = 0; i < 200000; ++i, t += 100) ev.push_back({t, t + 60});
  Viewport vp;
  vp.width_px = 1000;
  vp.fit(0, static_cast<double>(t));
  std::vector<SpanItem> items;
  build_span_items(ev, 60, true, vp, items);
  // 200k events across 1000 px: folded runs, at most about one box per 3 px.
  CHECK(items.size() <= 400);
  std::size_t total = 0;
  for (const auto& s : items) total += s.count;
  CHECK(total == ev.size());
}

TEST_CASE("counter bars match a per-column brute force", "[views][timeline]") {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<CounterPoint> pts;
    TimeNs t = 0;
    std::int64_t v = 0;
    const int n = 1 + static_cast<int>(rng() % (trial % 10 == 0 ? 200000 : 2000));
    for (int i = 0; i < n; ++i) {
      t += static_cast<TimeNs>(rng() % 1000);  // equal times happen
      v += static_cast<std::int64_t>(rng() % 2001) - 1000;
      pts.push_back({t, v});
    }
    const Viewport vp = random_viewport(rng, pts.front().time, pts.back().time + 1);
    std::vector<CounterBar> fast, indexed;
    build_counter_bars(pts, vp, fast);
    const CounterIndex index = build_counter_index(pts);
    build_counter_bars(pts, vp, indexed, &index);
    const std::vector<CounterBar> slow = reference_bars(pts, vp);
    INFO("trial " << trial);
    REQUIRE(fast.size() == slow.size());
    REQUIRE(indexed.size() == slow.size());
    for (std::size_t i = 0; i < fast.size(); ++i) {
      REQUIRE(fast[i].x == slow[i].x);
      REQUIRE(fast[i].min == slow[i].min);
      REQUIRE(fast[i].max == slow[i].max);
      REQUIRE(indexed[i].x == slow[i].x);
      REQUIRE(indexed[i].min == slow[i].min);
      REQUIRE(indexed[i].max == slow[i].max);
    }
  }
}

TEST_CASE("counter bars from the time buckets match the brute force at every zoom, bursts included", "[views][timeline]") {
  std::mt19937_64 rng(31);
  int bucketed = 0;
  for (int trial = 0; trial < 16; ++trial) {
    // Allocations come in bursts: runs of points at one time or a few ns apart, between long
    // quiet stretches (a bucket may hold thousands of points or none).
    std::vector<CounterPoint> pts;
    TimeNs t = static_cast<TimeNs>(rng() % 100000);
    std::int64_t v = 0;
    const int n = 2000 + static_cast<int>(rng() % 60000);
    for (int i = 0; i < n; ++i) {
      const int k = static_cast<int>(rng() % 100);
      t += k < 60 ? 0 : k < 95 ? static_cast<TimeNs>(rng() % 50) : static_cast<TimeNs>(rng() % 2000000);
      v += static_cast<std::int64_t>(rng() % 2001) - 1000;
      pts.push_back({t, v});
    }
    const CounterIndex index = build_counter_index(pts);
    const double whole = static_cast<double>(pts.back().time - pts.front().time + 1);
    for (double span = whole * 1.2; span > whole * 1e-4; span *= 0.5) {
      Viewport vp;
      vp.width_px = 60 + static_cast<double>(rng() % 240);
      const double start = static_cast<double>(pts.front().time) - span * 0.1 + static_cast<double>(rng() % 1000) / 1000.0 * whole;
      vp.fit(start, start + span);
      std::vector<CounterBar> got;
      build_counter_bars(pts, vp, got, &index);
      const std::vector<CounterBar> want = reference_bars(pts, vp);
      INFO("trial " << trial << " points " << n << " ns/px " << vp.ns_per_px << " bucket " << index.width);
      REQUIRE(got.size() == want.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        REQUIRE(got[i].x == want[i].x);
        REQUIRE(got[i].min == want[i].min);
        REQUIRE(got[i].max == want[i].max);
      }
      bucketed += index.buckets_apply(vp.ns_per_px);
    }
  }
  CHECK(bucketed > 30);
}

TEST_CASE("counter time buckets over the widest span a profile may hold", "[views][timeline]") {
  // Memory events 2^62 ns apart (value_bounds.h's extremes) with a few points or many: the bucket
  // width once came from span * 16 in 64 bits, which wrapped, and the app asked for ~2^62 buckets.
  constexpr TimeNs edge = TimeNs{1} << 61;
  for (int n : {2, 16, 17, 5000}) {
    INFO(n << " points");
    std::vector<CounterPoint> pts;
    for (int i = 0; i < n; ++i) pts.push_back({-edge + static_cast<TimeNs>(i), i});
    pts.back().time = edge;
    const CounterIndex index = build_counter_index(pts);
    const std::size_t buckets = index.bucket_first.size() - 1;
    CHECK(buckets >= 1);
    CHECK(buckets <= std::max<std::size_t>(1, 2 * static_cast<std::size_t>(n) / CounterIndex::kPointsPerBucket + 2));
    Viewport vp;
    vp.width_px = 200;
    vp.fit(static_cast<double>(-edge), static_cast<double>(edge));
    std::vector<CounterBar> got;
    build_counter_bars(pts, vp, got, &index);
    const std::vector<CounterBar> want = reference_bars(pts, vp);
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      CHECK(got[i].min == want[i].min);
      CHECK(got[i].max == want[i].max);
    }
  }
}

TEST_CASE("hit-testing matches a linear scan", "[views][timeline]") {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 100; ++trial) {
    const auto ev = random_track(rng, 1 + rng() % 2000, trial % 2 == 0);
    const Viewport vp = random_viewport(rng, ev.front().start, ev.back().end);
    std::vector<SpanItem> items;
    build_span_items(ev, max_dur(ev), ends_sorted(ev), vp, items);
    const float w = max_item_width(items);
    for (int q = 0; q < 200; ++q) {
      const float x = static_cast<float>(rng() % static_cast<unsigned>(vp.width_px + 40)) - 20.0f + 0.5f;
      int best = -1;
      float best_d = 0;
      for (std::size_t i = 0; i < items.size(); ++i) {
        const float right = std::max(items[i].x1, items[i].x0 + 1.0f);
        if (x < items[i].x0 - 2 || x > right + 2) continue;
        const float d = x < items[i].x0 ? items[i].x0 - x : (x > right ? x - right : 0.0f);
        if (best < 0 || d <= best_d) {  // later wins ties
          best = static_cast<int>(i);
          best_d = d;
        }
      }
      INFO("trial " << trial << " x " << x);
      REQUIRE(hit_test(items, x, 2.0f, w) == best);
    }
  }
}

namespace {
const Profile& synthetic_profile() {
  static test::TempDir dir;
  static Profile p = [] {
    SyntheticSpec spec;
    spec.ranks = 4;
    spec.layers = 4;
    write_synthetic_profile(dir.file("p.ssdb"), spec);
    return load_profile(dir.file("p.ssdb"));
  }();
  return p;
}
}  // namespace

TEST_CASE("range aggregate matches a brute-force sum", "[views][timeline]") {
  const Profile& p = synthetic_profile();
  std::vector<std::int32_t> all;
  for (std::size_t i = 0; i < p.stream_tracks.size(); ++i) all.push_back(static_cast<std::int32_t>(i));
  const TimeNs span = p.time_end - p.time_begin;
  const TimeNs t0 = p.time_begin + span / 5, t1 = p.time_begin + span / 2;
  const Aggregate a = aggregate_range(p, all, t0, t1);
  std::map<std::string, std::pair<std::int64_t, double>> by_name;
  std::int64_t n = 0;
  for (const auto& t : p.stream_tracks)
    for (const auto& e : t.events)
      if (e.end >= t0 && e.start <= t1) {
        auto& r = by_name[std::string(p.strings[e.name])];
        ++r.first;
        r.second += static_cast<double>(std::min(e.end, t1) - std::max(e.start, t0));
        ++n;
      }
  REQUIRE(n > 0);
  CHECK(a.kernel_count == n);
  REQUIRE(a.by_kernel.size() == by_name.size());
  double share = 0;
  for (const auto& row : a.by_kernel) {
    REQUIRE(by_name.count(row.name));
    CHECK(row.count == by_name[row.name].first);
    CHECK(row.total_ns == Approx(by_name[row.name].second));
    CHECK(row.mean_ns == Approx(row.total_ns / static_cast<double>(row.count)));
    share += row.share;
  }
  CHECK(share == Approx(1.0));
  for (std::size_t i = 1; i < a.by_kernel.size(); ++i) CHECK(a.by_kernel[i - 1].total_ns >= a.by_kernel[i].total_ns);
  std::int64_t module_count = 0;
  for (const auto& row : a.by_module) module_count += row.count;
  CHECK(module_count == n);
}

TEST_CASE("find returns every matching event in start order; next and previous wrap", "[views][timeline]") {
  const Profile& p = synthetic_profile();
  const auto hits = find_events(p, "FLASH_fwd");  // case-insensitive
  std::size_t expected = 0;
  for (const auto& t : p.stream_tracks)
    for (const auto& e : t.events) expected += p.strings[e.name].find("flash_fwd") != std::string_view::npos;
  REQUIRE(expected > 0);
  REQUIRE(hits.size() == expected);
  for (std::size_t i = 1; i < hits.size(); ++i) CHECK(event_info(p, hits[i - 1]).start <= event_info(p, hits[i]).start);
  CHECK(find_events(p, "no-such-kernel-name").empty());

  TimelineController c(p);
  c.set_find_query("flash_fwd");
  REQUIRE(c.find_next());
  CHECK(c.selected() == hits[0]);
  c.find_next();
  CHECK(c.selected() == hits[1]);
  c.find_previous();
  c.find_previous();
  CHECK(c.selected() == hits.back());
  // The found event is on screen and at least a few pixels wide.
  const EventInfo e = event_info(p, c.selected());
  CHECK(c.viewport().x_of(static_cast<double>(e.start)) >= 0);
  CHECK(c.viewport().x_of(static_cast<double>(e.end)) <= c.viewport().width_px);
}

namespace {
// Rank 0's first collective with a sequence number and a kernel.
const CollectiveEvent* first_rank0_collective(const Profile& p) {
  for (const auto& c : p.collectives)
    if (c.rank == 0 && c.sequence >= 0 && c.kernel_id >= 0) return &c;
  return nullptr;
}
// The timeline's ref of the kernel with that id (invalid when none).
EventRef kernel_ref(const Profile& p, std::int64_t kernel_id) {
  for (std::size_t t = 0; t < p.stream_tracks.size(); ++t)
    for (std::size_t i = 0; i < p.stream_tracks[t].events.size(); ++i)
      if (p.stream_tracks[t].events[i].id == static_cast<std::uint32_t>(kernel_id))
        return {TrackKind::Stream, static_cast<std::int32_t>(t), static_cast<std::uint32_t>(i)};
  return {};
}
}  // namespace

TEST_CASE("a collective links to the same collective on the other ranks", "[views][timeline]") {
  const Profile& p = synthetic_profile();
  const CollectiveEvent* c0 = first_rank0_collective(p);
  REQUIRE(c0);
  const EventRef ref = kernel_ref(p, c0->kernel_id);
  REQUIRE(ref.valid());
  const auto peers = collective_peers(p, ref);
  std::size_t expected = 0;
  for (const auto& c : p.collectives)
    expected += (&c != c0 && c.process_group == c0->process_group && c.sequence == c0->sequence);
  REQUIRE(expected == 3);  // 4 ranks in one group
  REQUIRE(peers.size() == expected);
  std::set<int> ranks;
  for (const auto& r : peers) {
    ranks.insert(p.stream_tracks[static_cast<std::size_t>(r.track)].rank);
    CHECK(p.strings[event_info(p, r).name] == p.strings[event_info(p, ref).name]);
  }
  CHECK(ranks == std::set<int>{1, 2, 3});
}

// gloo numbers a pipeline group's sends and receives with its collectives in each rank's own order:
// a rank's other operation at that number is not the same collective.
TEST_CASE("a rank's other operation at the same sequence number is not linked", "[views][timeline]") {
  Profile p = synthetic_profile();
  const CollectiveEvent* c0 = first_rank0_collective(p);
  REQUIRE(c0);
  for (auto& c : p.collectives)
    if (c.rank == 2 && c.process_group == c0->process_group && c.sequence == c0->sequence) c.type = CollectiveType::Send;
  const EventRef ref = kernel_ref(p, c0->kernel_id);
  REQUIRE(ref.valid());
  std::set<int> ranks;
  for (const auto& r : collective_peers(p, ref)) ranks.insert(p.stream_tracks[static_cast<std::size_t>(r.track)].rank);
  CHECK(ranks == std::set<int>{1, 3});
}

TEST_CASE("controller input: zoom, pan, box-select, collapse and pin", "[views][timeline]") {
  const Profile& p = synthetic_profile();
  TimelineController c(p);
  c.set_size(1400, 900);
  c.fit_all();
  const double nspp = c.viewport().ns_per_px;
  const float mx = kLabelWidth + 300;
  c.mouse_move(mx, 100);
  const double anchor = c.viewport().time_at(mx - kLabelWidth);
  c.key('W', false, false);
  CHECK(c.viewport().ns_per_px == Approx(nspp * 0.8));
  CHECK(c.viewport().time_at(mx - kLabelWidth) == Approx(anchor));
  c.wheel(mx, 100, 2, true, false);
  CHECK(c.viewport().ns_per_px == Approx(nspp * 0.8 * 0.64));
  const double start = c.viewport().start_ns;
  c.key('D', false, false);
  CHECK(c.viewport().start_ns == Approx(start + 0.1 * c.viewport().width_px * c.viewport().ns_per_px));
  // Drag pans by exactly the mouse movement.
  const double s2 = c.viewport().start_ns;
  c.mouse_press(mx, 100, MouseButton::Left, false);
  c.mouse_move(mx + 50, 100);
  c.mouse_release(mx + 50, 100, MouseButton::Left);
  CHECK(c.viewport().start_ns == Approx(s2 - 50 * c.viewport().ns_per_px));
  // Box select over all tracks.
  c.fit_all();
  c.mouse_press(kLabelWidth + 100, kRulerHeight + 1, MouseButton::Right, false);
  c.mouse_move(kLabelWidth + 700, 5000);
  c.mouse_release(kLabelWidth + 700, 5000, MouseButton::Right);
  REQUIRE(c.aggregate());
  CHECK(c.aggregate()->t0 == static_cast<TimeNs>(std::floor(c.viewport().time_at(100))));
  CHECK(c.aggregate()->kernel_count > 0);
  // Collapse / pin from the label column.
  const float y = c.track_y(2) + 2;
  c.mouse_press(10, y, MouseButton::Left, false);
  CHECK(c.tracks()[2].collapsed);
  c.mouse_press(10, y, MouseButton::Left, true);
  CHECK(c.tracks()[2].pinned);
  CHECK(c.track_y(2) == Approx(kRulerHeight));  // pinned tracks go to the top
  Frame f;
  c.build_frame(f);
  REQUIRE(!f.tracks.empty());
  CHECK(f.tracks.back().track == 2);  // drawn last, on top
}

TEST_CASE("an analysis overlay adds counter tracks after their rank's rows and replaces the previous one", "[views][timeline]") {
  const Profile& p = synthetic_profile();
  TimelineController c(p);
  c.set_size(1400, 900);
  c.fit_all();
  const std::size_t rows = c.tracks().size();
  REQUIRE(p.ranks.size() >= 2);
  c.tracks()[0].collapsed = true;  // the user's row state survives overlays

  const TimeNs t0 = p.time_begin, t1 = p.time_end, mid = (t0 + t1) / 2;
  OverlayCounter util{"temporal: utilisation", 1, "%", {{t0, 250}, {mid, 1000}, {t1, 500}}, 10};
  OverlayCounter all{"global", -1, "", {{t0, 7}}, 1};
  c.set_overlay({{t0, mid, 1, "slow"}, {mid, t1, -1, ""}}, {util, all});
  // Two counter rows, and a marker lane on every rank (the rank -1 marker goes on each).
  REQUIRE(c.tracks().size() == rows + 2 + p.ranks.size());
  CHECK(c.markers().size() == 2);
  CHECK(c.tracks()[0].collapsed);
  // Rank 1's counter right after rank 1's last row; the rank-less one at the end.
  std::size_t at = 0;
  for (std::size_t i = 0; i < c.tracks().size(); ++i)
    if (c.tracks()[i].kind == TrackKind::Counter && c.tracks()[i].index == 0) at = i;
  REQUIRE(at > 0);
  CHECK(c.tracks()[at - 1].rank == 1);
  CHECK(c.tracks()[at - 1].kind != TrackKind::Markers);
  CHECK(c.tracks()[at - 1].kind != TrackKind::Counter);
  CHECK((at + 1 == c.tracks().size() || c.tracks()[at + 1].rank != 1 || c.tracks()[at + 1].kind == TrackKind::Counter));
  CHECK(c.tracks().back().kind == TrackKind::Counter);
  CHECK(c.tracks().back().index == 1);
  CHECK(c.tracks()[at].label == "rank 1 temporal: utilisation");

  // The counter row draws bars scaled to its own maximum (the raw integer values).
  c.set_scroll_y(c.track_y(static_cast<std::int32_t>(at)) - kRulerHeight);
  Frame f;
  c.build_frame(f);
  const auto row = std::find_if(f.tracks.begin(), f.tracks.end(), [&](const TrackDraw& d) { return d.track == static_cast<std::int32_t>(at); });
  REQUIRE(row != f.tracks.end());
  CHECK(row->bar_max == 1000);
  CHECK(!row->bars.empty());
  CHECK_FALSE(c.event_at(kLabelWidth + 10, row->y + 5).valid());  // counters are not selectable events

  // A second overlay replaces the first; an empty one clears it.
  c.set_overlay({}, {util});
  CHECK(c.tracks().size() == rows + 1);
  CHECK(c.markers().empty());
  c.set_overlay({}, {});
  CHECK(c.tracks().size() == rows);
  CHECK(c.tracks()[0].collapsed);
}

namespace {
std::size_t count_kind(const TimelineController& c, TrackKind kind) {
  return static_cast<std::size_t>(
      std::count_if(c.tracks().begin(), c.tracks().end(), [&](const Track& t) { return t.kind == kind; }));
}
}  // namespace

TEST_CASE("analysis markers go on one lane per rank, without growing the other tracks", "[views][timeline]") {
  const Profile& p = synthetic_profile();
  TimelineController c(p);
  c.set_size(1400, 900);
  std::vector<std::pair<std::string, float>> before;
  for (const Track& t : c.tracks()) before.emplace_back(t.label, t.height());
  // 120 markers on rank 0 (durations 1..120 us, shuffled so the longest are not simply the
  // last ones), 5 on every rank.
  std::vector<OverlayMarker> markers;
  std::mt19937_64 rng(3);
  std::vector<TimeNs> durations;
  for (int i = 1; i <= 120; ++i) durations.push_back(i * 1000);
  std::shuffle(durations.begin(), durations.end(), rng);
  const TimeNs span = p.time_end - p.time_begin;
  for (int i = 0; i < 120; ++i) {
    const TimeNs s = p.time_begin + span * i / 130;
    markers.push_back({s, s + durations[static_cast<std::size_t>(i)], 0, "m" + std::to_string(i)});
  }
  // Longer than all of rank 0's, so they are among the longest 50 whatever the limit.
  for (int i = 0; i < 5; ++i) markers.push_back({p.time_begin + span * i / 6, p.time_begin + span * i / 6 + 500000, -1, ""});
  c.set_overlay(markers, {});

  // One lane per rank, right after its steps row; every other track as before, same height.
  REQUIRE(count_kind(c, TrackKind::Markers) == p.ranks.size());
  std::vector<std::pair<std::string, float>> after;
  for (std::size_t i = 0; i < c.tracks().size(); ++i) {
    const Track& t = c.tracks()[i];
    if (t.kind != TrackKind::Markers) {
      after.emplace_back(t.label, t.height());
      continue;
    }
    REQUIRE(i > 0);
    CHECK(c.tracks()[i - 1].kind == TrackKind::Steps);
    CHECK(c.tracks()[i - 1].rank == t.rank);
    CHECK(t.height() == Approx(kRowHeight));
  }
  CHECK(after == before);

  // Top N by duration over all markers: the 5 everywhere-markers and rank 0's 45 longest.
  REQUIRE(c.shown_markers().size() == kDefaultMarkerLimit);
  TimeNs shortest_shown = std::numeric_limits<TimeNs>::max(), longest_hidden = 0;
  std::set<std::uint32_t> shown(c.shown_markers().begin(), c.shown_markers().end());
  for (std::uint32_t i = 0; i < markers.size(); ++i) {
    const TimeNs d = markers[i].end - markers[i].start;
    if (shown.count(i))
      shortest_shown = std::min(shortest_shown, d);
    else
      longest_hidden = std::max(longest_hidden, d);
  }
  CHECK(shortest_shown >= longest_hidden);
  CHECK(shortest_shown == 76000);  // 120 - 45 + 1 us
  CHECK(c.marker_lanes().front().spans.size() == kDefaultMarkerLimit);
  CHECK(c.marker_lanes().back().spans.empty() == false);

  // Show all: every marker, the rank -1 ones on every lane.
  c.set_show_all_markers(true);
  CHECK(c.shown_markers().size() == markers.size());
  for (const MarkerLane& lane : c.marker_lanes()) CHECK(lane.spans.size() == (lane.rank == p.ranks.front().info.rank ? 125u : 5u));

  // Hide (markers kept, lanes gone), show again, with the M key; then clear.
  c.set_markers_visible(false);
  CHECK(count_kind(c, TrackKind::Markers) == 0);
  CHECK(c.tracks().size() == before.size());
  CHECK(c.markers().size() == markers.size());
  CHECK(c.key('M', false, false));
  CHECK(c.markers_visible());
  CHECK(count_kind(c, TrackKind::Markers) == p.ranks.size());
  CHECK(c.key('M', false, false));
  CHECK(count_kind(c, TrackKind::Markers) == 0);
  c.set_markers_visible(true);
  CHECK(count_kind(c, TrackKind::Markers) == p.ranks.size());

  // The buttons on a lane's label: "all"/"top" toggles the limit, "x" hides.
  std::int32_t lane = -1;
  for (std::size_t i = 0; i < c.tracks().size(); ++i)
    if (c.tracks()[i].kind == TrackKind::Markers) {
      lane = static_cast<std::int32_t>(i);
      break;
    }
  REQUIRE(lane >= 0);
  const float ly = c.track_y(lane) + 5;
  CHECK(c.mouse_press(kLabelWidth - kMarkerHideButton - kMarkerAllButton / 2, ly, MouseButton::Left, false));
  CHECK_FALSE(c.show_all_markers());
  CHECK(c.shown_markers().size() == kDefaultMarkerLimit);
  CHECK(c.mouse_press(kLabelWidth - kMarkerHideButton / 2, ly, MouseButton::Left, false));
  CHECK_FALSE(c.markers_visible());
  CHECK(count_kind(c, TrackKind::Markers) == 0);

  // Hovering a marker names it; a new overlay shows its markers again; clearing drops them.
  c.set_overlay({{p.time_begin, p.time_end, 0, "whole"}}, {});
  REQUIRE(c.markers_visible());
  for (std::size_t i = 0; i < c.tracks().size(); ++i)
    if (c.tracks()[i].kind == TrackKind::Markers) lane = static_cast<std::int32_t>(i);
  c.fit_all();
  c.mouse_move(kLabelWidth + 300, c.track_y(lane) + 5);
  CHECK(c.hovered_marker() == 0);
  c.clear_markers();
  CHECK(c.markers().empty());
  CHECK(count_kind(c, TrackKind::Markers) == 0);
  CHECK(c.hovered_marker() == -1);
}

TEST_CASE("ruler labels keep enough digits to differ at every zoom, and never read negative", "[views][timeline]") {
  CHECK(format_tick(65095123.0, 100) == "65.0951 ms");
  CHECK(format_tick(65095200.0, 100) == "65.0952 ms");
  CHECK(format_tick(2e9, 5e8) == "2.0 s");
  CHECK(format_tick(0, 1e6) == "0 ms");
  // Around 65.095 ms from the origin, at scales from 1 s per pixel to 0.01 ns per pixel: ten
  // consecutive ticks, all different.
  for (double nspp = 1e9; nspp >= 0.01; nspp /= 3) {
    const double step = nice_step(nspp * 110);
    CHECK(step >= 1.0);
    const double first = std::ceil(65095123.0 / step) * step;
    std::set<std::string> seen;
    for (int i = 0; i < 10; ++i) seen.insert(format_tick(first + i * step, step));
    CHECK(seen.size() == 10);
  }
  // A deep zoom far from the origin: no "1211651.14 us"; one tick in full, the rest as offsets.
  CHECK(format_tick(1211651140.0, 10) == "1211651.14 us");  // what the ruler no longer shows alone
  CHECK(tick_needs_base(1211651140.0, 10));
  CHECK(format_compound(1211651140.0, 10) == "1 s 211 ms 651 us 140 ns");
  CHECK(format_compound(1211651140.0, 2000) == "1 s 211 ms 651 us");
  CHECK(format_compound(65000.0, 10) == "65 us 0 ns");
  CHECK(format_tick(20, 10) == "20 ns");
  CHECK_FALSE(tick_needs_base(65095123.0, 100));  // "65.0951 ms" reads well as it is
  CHECK_FALSE(tick_needs_base(2e9, 5e8));
  for (double nspp = 1e9; nspp >= 0.01; nspp /= 3) {  // at every zoom, no label is longer than 4 integer digits
    const double step = nice_step(nspp * 110);
    for (double t : {1211651140.0, 65095123.0, 400e9})
      if (!tick_needs_base(t, step)) {
        const std::string label = format_tick(std::ceil(t / step) * step, step);
        INFO(label);
        CHECK(label.find_first_of(". ") <= 4);  // integer digits
      }
  }
  // Times are counted from the profile's start; before it (the view's margin) they read 0.
  CHECK(format_since(1000, 1000) == "0 ns");
  CHECK(format_since(400, 1000) == "0 ns");
  CHECK(format_since(2'501'000, 1000) == "2.500 ms");
}

TEST_CASE("pan and zoom-out stop at the profile's span plus a margin", "[views][timeline]") {
  const Profile& p = synthetic_profile();
  TimelineController c(p);
  c.set_size(1400, 900);
  c.fit_all();
  const double span = static_cast<double>(p.time_end - p.time_begin);
  const double lo = static_cast<double>(p.time_begin) - span * kViewMargin, hi = static_cast<double>(p.time_end) + span * kViewMargin;
  for (int i = 0; i < 50; ++i) c.key('S', false, false);  // zoom out far
  CHECK(c.viewport().end_ns() - c.viewport().start_ns <= hi - lo + 1);
  CHECK(c.viewport().start_ns >= lo - 1);
  for (int i = 0; i < 10; ++i) c.key('W', false, false);
  for (int i = 0; i < 200; ++i) c.key('D', false, false);  // pan far right
  CHECK(c.viewport().end_ns() == Approx(hi));
  for (int i = 0; i < 200; ++i) c.key('A', false, false);
  CHECK(c.viewport().start_ns == Approx(lo));
  // A drag far to the right (content moves right, the window back in time) and Shift+wheel.
  c.mouse_press(kLabelWidth + 100, 200, MouseButton::Left, false);
  c.mouse_move(kLabelWidth + 1100, 200);
  c.mouse_release(kLabelWidth + 1100, 200, MouseButton::Left);
  CHECK(c.viewport().start_ns >= lo - 1);
  for (int i = 0; i < 100; ++i) c.wheel(kLabelWidth + 100, 200, -3, false, true);
  CHECK(c.viewport().end_ns() <= hi + 1);
  CHECK(c.viewport().end_ns() == Approx(hi));
  for (int i = 0; i < 100; ++i) c.wheel(kLabelWidth + 100, 200, -3, true, false);  // Ctrl+wheel out
  CHECK(c.viewport().end_ns() - c.viewport().start_ns <= hi - lo + 1);
}

TEST_CASE("leaving the widget clears the hover", "[views][timeline]") {
  const Profile& p = synthetic_profile();
  TimelineController c(p);
  c.set_size(1400, 900);
  const StreamTrack& st = p.stream_tracks.front();
  const KernelEvent& e = st.events[st.events.size() / 2];
  c.show_range(e.start, e.end);
  std::int32_t track = -1;
  for (std::size_t i = 0; i < c.tracks().size(); ++i)
    if (c.tracks()[i].kind == TrackKind::Stream && c.tracks()[i].index == 0) track = static_cast<std::int32_t>(i);
  REQUIRE(track >= 0);
  c.set_scroll_y(c.track_y(track) - kRulerHeight - 100);
  c.mouse_move(static_cast<float>(c.x_of(static_cast<double>(e.start + e.end) / 2)), c.track_y(track) + 5);
  REQUIRE(c.hovered().valid());
  CHECK(c.mouse_leave());
  CHECK_FALSE(c.hovered().valid());
  CHECK_FALSE(c.mouse_leave());  // nothing left to clear
}

TEST_CASE("the vertical scrollbar's range and thumb follow the content and drive the scroll", "[views][timeline]") {
  const Profile& p = synthetic_profile();
  TimelineController c(p);
  const float content = total_tracks_height(c.tracks());
  c.set_size(1400, kRulerHeight + content + 50);  // everything fits: no scrollbar
  CHECK_FALSE(c.scrollbar().visible);
  const float visible = 300;
  c.set_size(1400, kRulerHeight + visible);
  Scrollbar sb = c.scrollbar();
  REQUIRE(sb.visible);
  CHECK(sb.max_scroll == Approx(content - visible));
  CHECK(sb.x1 == Approx(1400));
  CHECK(sb.y0 == Approx(kRulerHeight));
  CHECK(sb.thumb_y1 - sb.thumb_y0 == Approx(std::max(20.0f, visible * visible / content)));
  CHECK(sb.thumb_y0 == Approx(kRulerHeight));
  // The wheel moves the thumb in proportion.
  c.wheel(kLabelWidth + 10, 100, -2, false, false);
  sb = c.scrollbar();
  const float free = (sb.y1 - sb.y0) - (sb.thumb_y1 - sb.thumb_y0);
  CHECK(sb.thumb_y0 - sb.y0 == Approx(free * c.scroll_y() / sb.max_scroll));
  CHECK(c.scroll_y() > 0);
  // Dragging the thumb to the bottom scrolls to the end; a click high in the trough goes back.
  const float grab_y = (sb.thumb_y0 + sb.thumb_y1) / 2;
  c.mouse_press(sb.x0 + 3, grab_y, MouseButton::Left, false);
  c.mouse_move(sb.x0 + 3, grab_y + 5000);
  c.mouse_release(sb.x0 + 3, grab_y + 5000, MouseButton::Left);
  CHECK(c.scroll_y() == Approx(sb.max_scroll));
  CHECK(c.scrollbar().thumb_y1 == Approx(sb.y1));
  c.mouse_press(sb.x0 + 3, sb.y0 + 1, MouseButton::Left, false);
  c.mouse_release(sb.x0 + 3, sb.y0 + 1, MouseButton::Left);
  CHECK(c.scroll_y() == Approx(0));
  CHECK_FALSE(c.aggregate());  // the scrollbar is not part of the event area
}

TEST_CASE("density: busy fraction per pixel column of folded runs", "[views][timeline]") {
  struct E {
    TimeNs start, end;
  };
  // Hand-made: at 100 ns per pixel, column 0 holds [0,50) (half busy), column 1 [100,200) (all),
  // column 2 [250,260) (a tenth), column 3 nothing, column 4 [420,430) + [470,490) (0.3).
  const std::vector<E> ev{{0, 50}, {100, 200}, {250, 260}, {420, 430}, {470, 490}};
  Viewport vp;
  vp.width_px = 6;
  vp.start_ns = 0;
  vp.ns_per_px = 100;
  std::vector<SpanItem> items;
  build_span_items(ev, 100, true, vp, items, 1000.0);  // fold everything into one run
  REQUIRE(items.size() == 1);
  REQUIRE(items[0].count == ev.size());
  const CoverIndex index = build_cover_index(ev);
  std::vector<DensityColumn> cols;
  build_density(ev, index, items, vp, cols);
  REQUIRE(cols.size() == 4);
  CHECK(cols[0].x == 0);
  CHECK(cols[0].busy == Approx(0.5));
  CHECK(cols[1].x == 1);
  CHECK(cols[1].busy == Approx(1.0));
  CHECK(cols[2].x == 2);
  CHECK(cols[2].busy == Approx(0.1));
  CHECK(cols[3].x == 4);
  CHECK(cols[3].busy == Approx(0.3));

  // Overlapping events count once: [0,80) and [40,120) cover column 0 fully and 20 % of column 1.
  const std::vector<E> overlap{{0, 80}, {40, 120}, {50, 60}};
  items.clear();
  build_span_items(overlap, 80, false, vp, items, 1000.0);
  cols.clear();
  build_density(overlap, build_cover_index(overlap), items, vp, cols);
  REQUIRE(cols.size() == 2);
  CHECK(cols[0].busy == Approx(1.0));
  CHECK(cols[1].busy == Approx(0.2));

  // Random tracks (many blocks of kSpanBlock; a third with overlapping events) against a
  // per-column brute force: the measure of the union of the events inside the column.
  std::mt19937_64 rng(9);
  for (int trial = 0; trial < 60; ++trial) {
    const bool overlapping = trial % 3 == 0;
    const auto track = random_track(rng, 200 + rng() % 5000, overlapping);
    const Viewport v = random_viewport(rng, track.front().start, track.back().end);
    std::vector<SpanItem> its;
    build_span_items(track, max_dur(track), !overlapping, v, its);
    std::vector<DensityColumn> got;
    build_density(track, build_cover_index(track), its, v, got);
    std::size_t folds = 0;
    for (const SpanItem& s : its) folds += s.count > 1;
    for (const DensityColumn& col : got) {
      const double a = v.time_at(col.x), b = v.time_at(col.x + 1);
      double want = 0, until = a;  // union measure inside [a, b): events are in start order
      for (const Ev& e : track) {
        const double s0 = std::max({a, static_cast<double>(e.start), until}), e0 = std::min(b, static_cast<double>(e.end));
        if (e0 > s0) want += e0 - s0;
        until = std::max(until, std::min(b, static_cast<double>(e.end)));
      }
      CHECK(col.busy == Approx(std::min(1.0, want / v.ns_per_px)).margin(1e-4));
    }
    CHECK((folds == 0 || !got.empty()));
  }
}

TEST_CASE("density: columns holding thousands of events use the block states, within a few percent", "[views][timeline]") {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 4; ++trial) {
    const bool overlapping = trial % 2 == 1;
    const auto track = random_track(rng, 200000, overlapping);
    Viewport v;
    v.width_px = 100;  // ~2000 events per column: the coarse path
    v.fit(static_cast<double>(track.front().start), static_cast<double>(track.back().end));
    std::vector<SpanItem> its;
    build_span_items(track, max_dur(track), !overlapping, v, its);
    std::vector<DensityColumn> got;
    build_density(track, build_cover_index(track), its, v, got);
    REQUIRE(got.size() > 50);
    for (const DensityColumn& col : got) {
      const double a = v.time_at(col.x), b = v.time_at(col.x + 1);
      double want = 0, until = a;
      for (const Ev& e : track) {
        if (static_cast<double>(e.start) >= b) break;
        const double s0 = std::max({a, static_cast<double>(e.start), until}), e0 = std::min(b, static_cast<double>(e.end));
        if (e0 > s0) want += e0 - s0;
        until = std::max(until, std::min(b, static_cast<double>(e.end)));
      }
      CHECK(col.busy == Approx(std::min(1.0, want / v.ns_per_px)).margin(0.05));
    }
  }
}

namespace {
// Tracks whose ends are in start order (one CUDA stream, one range depth), in the shapes that
// matter to the level-of-detail path: kernels of lognormal lengths, a regular grid (where a fold's
// walk depends on where it started), bursts with idle gaps of every length from 1 ns to 10 ms (so
// that some gap lands between min_px and 2 min_px at every zoom), zero-length events, events that
// overlap while their ends stay sorted, and random_track's mix.
std::vector<Ev> lod_track(std::mt19937_64& rng, int shape, std::size_t n) {
  if (shape == 5) return random_track(rng, n, false);
  std::vector<Ev> ev;
  std::lognormal_distribution<double> kernel(std::log(2000.0), 1.0);
  TimeNs t = 5000 + static_cast<TimeNs>(rng() % 1000);
  for (std::size_t i = 0; i < n; ++i) {
    TimeNs d = 0, gap = 0;
    switch (shape) {
      case 0: d = 100 + static_cast<TimeNs>(kernel(rng)); gap = static_cast<TimeNs>(rng() % 400); break;
      case 1: d = 900; gap = 100; break;
      case 2:
        d = 50 + static_cast<TimeNs>(rng() % 500);
        gap = rng() % 16 == 0 ? static_cast<TimeNs>(std::pow(10.0, static_cast<double>(rng() % 7000) / 1000.0)) : static_cast<TimeNs>(rng() % 30);
        break;
      case 3: d = rng() % 3 == 0 ? 0 : 1 + static_cast<TimeNs>(rng() % 100); gap = static_cast<TimeNs>(rng() % 60); break;
      default: {  // overlapping, ends sorted
        const TimeNs start = t + static_cast<TimeNs>(rng() % 40);
        const TimeNs end = std::max(ev.empty() ? start : ev.back().end, start + static_cast<TimeNs>(rng() % 300));
        ev.push_back({start, end});
        t = start;
        continue;
      }
    }
    t += gap;
    ev.push_back({t, t + d});
    t += d;
  }
  return ev;
}

// A view `span` ns wide at a random place over the track (whole track: span = 0).
Viewport view_over(std::mt19937_64& rng, const std::vector<Ev>& ev, double width, double span) {
  Viewport vp;
  vp.width_px = width;
  const double a = static_cast<double>(ev.front().start), b = static_cast<double>(ev.back().end);
  if (span <= 0) {
    vp.fit(a, b);
    return vp;
  }
  const double start = a - span * 0.2 + static_cast<double>(rng() % 10000) / 10000.0 * (b - a + span * 0.2);
  vp.fit(start, start + span);
  return vp;
}
}  // namespace

TEST_CASE("level of detail: folding and density follow the exact path at every zoom", "[views][timeline]") {
  std::mt19937_64 rng(24);
  int views = 0, lod_views = 0;
  for (int trial = 0; trial < 36; ++trial) {
    const int shape = trial % 6;
    const auto ev = lod_track(rng, shape, 500 + rng() % (trial < 30 ? 20000 : 300000));
    const SpanLod lod = build_span_lod(ev, ends_sorted(ev));
    REQUIRE(ends_sorted(ev));
    REQUIRE_FALSE(lod.empty());
    const test::CoveredTime covered(ev);
    const double whole = static_cast<double>(ev.back().end - ev.front().start);
    // The whole track, then zooming in by 0.8 from there: every scale, down to a few events
    // on screen, and random widths.
    for (double span = 0; span == 0 || span > whole * 1e-5; span = span == 0 ? whole : span * 0.8) {
      const Viewport vp = view_over(rng, ev, 200 + static_cast<double>(rng() % 1800), span);
      const std::string err = test::lod_mismatch(ev, lod, covered, vp);
      INFO("trial " << trial << " shape " << shape << " events " << ev.size() << " ns/px " << vp.ns_per_px << " from "
                    << vp.start_ns << " bucket " << lod.cover.bucket_ns() << " ns");
      REQUIRE(err.empty());
      ++views;
      lod_views += lod.applies(vp.ns_per_px);
    }
  }
  // Both sides of the switch were exercised.
  CHECK(lod_views > 100);
  CHECK(views - lod_views > 100);
}

TEST_CASE("level of detail: the work of a zoomed-out frame follows the pixels, not the events", "[views][timeline]") {
  // Reads of the events, counted: the summaries are read instead.
  struct Counting {
    const std::vector<Ev>* ev;
    mutable std::size_t reads = 0;
    std::size_t size() const { return ev->size(); }
    const Ev& operator[](std::size_t i) const {
      ++reads;
      return (*ev)[i];
    }
  };
  std::mt19937_64 rng(5);
  std::vector<std::size_t> reads;
  for (const std::size_t n : {20000u, 200000u, 2000000u}) {
    const auto ev = lod_track(rng, 0, n);  // sub-pixel kernels back to back, one fold
    const Counting track{&ev};
    const SpanLod lod = build_span_lod(track, true);
    const auto block_ends = build_span_index(ev);
    Viewport vp;
    vp.width_px = 1600;
    vp.fit(static_cast<double>(ev.front().start), static_cast<double>(ev.back().end));
    REQUIRE(lod.applies(vp.ns_per_px));
    track.reads = 0;
    std::vector<SpanItem> items;
    std::vector<DensityColumn> cols;
    build_span_items_lod(track, lod, block_ends, vp, items);
    build_density_lod(track, lod, block_ends, items, vp, cols);
    CHECK(cols.size() >= 1590);  // shaded across the width
    std::size_t total = 0;
    for (const auto& s : items) total += s.count;
    CHECK(total == n);
    reads.push_back(track.reads);
  }
  INFO("event reads at 20k, 200k, 2M events: " << reads[0] << ", " << reads[1] << ", " << reads[2]);
  // A few reads per run and per sparse column, plus the searches for the view's ends: the count
  // does not grow with the events.
  CHECK(reads[2] <= 200);
  CHECK(reads[2] <= reads[0] + 64);
}

TEST_CASE("labels are placed only where they do not overlap one on the same row", "[views][timeline]") {
  LabelRows rows;
  CHECK(rows.place(10, 0, 50));
  CHECK_FALSE(rows.place(10, 40, 90));  // overlaps the first
  CHECK(rows.place(10, 50, 90));        // touching is fine
  CHECK(rows.place(30, 40, 90));        // another row
  CHECK_FALSE(rows.place(30, 0, 45));
  CHECK(label_fits(40, 0, 46));
  CHECK_FALSE(label_fits(40, 0, 45));
}

TEST_CASE("stream rows are labelled by a stream's own name when it says what it carries", "[timeline]") {
  Profile p;
  RankModel r;
  r.info.rank = 0;
  auto add = [&](StreamKind kind, std::int64_t id, const std::string& name) {
    StreamTrack t;
    t.kind = kind;
    t.native_id = id;
    t.name = name;
    r.stream_tracks.push_back(static_cast<std::int32_t>(p.stream_tracks.size()));
    p.stream_tracks.push_back(std::move(t));
  };
  add(StreamKind::Compute, 7, "compute");                          // only the kind: kind and id
  add(StreamKind::Nccl, 24, "NCCL stream 24");                     // the collector's: kind and id
  add(StreamKind::Nccl, 13, "stream 13");                          // importers': kind and id
  add(StreamKind::Nccl, 28, "nccl PP send/recv");            // a simulated lane: its name
  add(StreamKind::Copy, 24 + 1, "host-to-device copies (offload)");
  add(StreamKind::Nccl, 30, "");
  p.ranks.push_back(r);
  std::set<std::string> labels;
  for (const auto& t : timeline::build_tracks(p)) labels.insert(t.label);
  CHECK(labels == std::set<std::string>{"rank 0 compute stream 7", "rank 0 nccl stream 24", "rank 0 nccl stream 13",
                                        "rank 0 nccl PP send/recv", "rank 0 host-to-device copies (offload)",
                                        "rank 0 nccl stream 30"});
}
