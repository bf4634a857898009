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
#include "views/timeline/analysis.h"
#include "views/timeline/draw_items.h"
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
    const auto block_ends = build_span_index(ev);
    if (ends_sorted(ev)) build_span_items(ev, max_dur(ev), true, vp, indexed, kMinVisiblePx, &block_ends);
    else indexed = fast;
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

TEST_CASE("a collective links to the same collective on the other ranks", "[views][timeline]") {
  const Profile& p = synthetic_profile();
  const CollectiveEvent* c0 = nullptr;
  for (const auto& c : p.collectives)
    if (c.rank == 0 && c.sequence >= 0 && c.kernel_id >= 0) {
      c0 = &c;
      break;
    }
  REQUIRE(c0);
  EventRef ref;
  for (std::size_t t = 0; t < p.stream_tracks.size(); ++t)
    for (std::size_t i = 0; i < p.stream_tracks[t].events.size(); ++i)
      if (p.stream_tracks[t].events[i].id == static_cast<std::uint32_t>(c0->kernel_id))
        ref = {TrackKind::Stream, static_cast<std::int32_t>(t), static_cast<std::uint32_t>(i)};
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
  REQUIRE(c.tracks().size() == rows + 2);
  CHECK(c.markers().size() == 2);
  CHECK(c.tracks()[0].collapsed);
  // Rank 1's counter right after rank 1's last row; the rank-less one at the end.
  std::size_t at = 0;
  for (std::size_t i = 0; i < c.tracks().size(); ++i)
    if (c.tracks()[i].kind == TrackKind::Counter && c.tracks()[i].index == 0) at = i;
  REQUIRE(at > 0);
  CHECK(c.tracks()[at - 1].rank == 1);
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
