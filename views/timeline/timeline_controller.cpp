#include "views/timeline/timeline_controller.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace ss::timeline {

namespace {
constexpr double kZoomStep = 0.8;     // W / one wheel notch: the span shrinks to 80 %
constexpr double kPanFraction = 0.1;  // A / D: a tenth of the width
constexpr float kClickSlop = 3.0f;    // a press that moves less than this is a click

TimeNs max_duration_of(const std::vector<StepRow>& steps) {
  TimeNs m = 0;
  for (const auto& s : steps) m = std::max(m, s.end - s.start);
  return m;
}
}  // namespace

TimelineController::TimelineController(const Profile& profile) : profile_(profile), tracks_(build_tracks(profile)) {
  index_tracks();
  set_size(width_, height_);
  fit_all();
}

void TimelineController::index_tracks() {
  counter_max_.assign(tracks_.size(), 0);
  counter_index_.assign(tracks_.size(), {});
  span_index_.assign(tracks_.size(), {});
  cover_index_.assign(tracks_.size(), {});
  span_lod_.assign(tracks_.size(), {});
  for (std::size_t i = 0; i < tracks_.size(); ++i) {
    const Track& t = tracks_[i];
    if (t.kind == TrackKind::Stream) {
      const auto& ev = profile_.stream_tracks[static_cast<std::size_t>(t.index)].events;
      span_index_[i] = t.ends_sorted ? build_span_index(ev) : build_block_max_index(ev);
      cover_index_[i] = build_cover_index(ev);
      span_lod_[i] = build_span_lod(ev, t.ends_sorted);
    }
    if (t.kind == TrackKind::Ranges) {
      const auto& ev = profile_.range_tracks[static_cast<std::size_t>(t.index)].events;
      span_index_[i] = t.ends_sorted ? build_span_index(ev) : build_block_max_index(ev);
      cover_index_[i] = build_cover_index(ev);
      span_lod_[i] = build_span_lod(ev, t.ends_sorted);
    }
    if (t.kind == TrackKind::Steps) cover_index_[i] = build_cover_index(profile_.ranks[static_cast<std::size_t>(t.index)].steps);
    const std::vector<CounterPoint>* points = nullptr;
    if (t.kind == TrackKind::Memory) points = &profile_.ranks[static_cast<std::size_t>(t.index)].memory;
    if (t.kind == TrackKind::Counter) points = &overlay_counters_[static_cast<std::size_t>(t.index)].points;
    if (!points) continue;
    for (const auto& c : *points) counter_max_[i] = std::max(counter_max_[i], c.value);
    counter_index_[i] = build_counter_index(*points);
  }
}

void TimelineController::set_overlay(std::vector<OverlayMarker> markers, std::vector<OverlayCounter> counters) {
  markers_ = std::move(markers);
  markers_visible_ = true;  // a new result is meant to be seen
  overlay_counters_ = std::move(counters);
  for (auto& c : overlay_counters_)  // build_counter_bars needs time order
    std::stable_sort(c.points.begin(), c.points.end(), [](const CounterPoint& a, const CounterPoint& b) { return a.time < b.time; });
  std::erase_if(tracks_, [](const Track& t) { return t.kind == TrackKind::Counter; });
  for (std::size_t ci = 0; ci < overlay_counters_.size(); ++ci) {
    const OverlayCounter& c = overlay_counters_[ci];
    // After the last row of the counter's rank (the end for -1 or a rank without rows).
    auto at = tracks_.end();
    if (c.rank >= 0) {
      auto last = std::find_if(tracks_.rbegin(), tracks_.rend(), [&](const Track& t) { return t.rank == c.rank; });
      if (last != tracks_.rend()) at = last.base();
    }
    Track t;
    t.kind = TrackKind::Counter;
    t.rank = c.rank >= 0 ? c.rank : (tracks_.empty() ? 0 : tracks_.back().rank);
    t.index = static_cast<std::int32_t>(ci);
    t.label = (c.rank >= 0 ? "rank " + std::to_string(c.rank) + " " : std::string()) + c.label;
    tracks_.insert(at, std::move(t));
  }
  rebuild_marker_lanes();
}

void TimelineController::rebuild_marker_lanes() {
  std::vector<int> collapsed;  // the user's folded lanes stay folded
  for (const Track& t : tracks_)
    if (t.kind == TrackKind::Markers && t.collapsed) collapsed.push_back(t.rank);
  std::erase_if(tracks_, [](const Track& t) { return t.kind == TrackKind::Markers; });
  shown_markers_ = markers_visible_ ? top_markers(markers_, marker_limit_, show_all_markers_) : std::vector<std::uint32_t>{};
  std::vector<int> ranks;
  for (const RankModel& r : profile_.ranks) ranks.push_back(r.info.rank);
  marker_lanes_ = build_marker_lanes(markers_, shown_markers_, ranks);
  for (std::size_t li = 0; li < marker_lanes_.size(); ++li) {
    const int rank = marker_lanes_[li].rank;
    // At the top of the rank, after its steps row (the two read together); at the end when the
    // rank has no rows.
    auto at = std::find_if(tracks_.begin(), tracks_.end(), [&](const Track& t) { return t.rank == rank; });
    if (at != tracks_.end() && at->kind == TrackKind::Steps) ++at;
    Track t;
    t.kind = TrackKind::Markers;
    t.rank = rank;
    t.index = static_cast<std::int32_t>(li);
    t.label = "rank " + std::to_string(rank) + " markers";
    t.ends_sorted = false;
    t.collapsed = std::find(collapsed.begin(), collapsed.end(), rank) != collapsed.end();
    tracks_.insert(at, std::move(t));
  }
  hovered_marker_ = -1;
  index_tracks();
  clamp_scroll();
  if (on_markers_changed) on_markers_changed();
}

void TimelineController::set_markers_visible(bool visible) {
  if (visible == markers_visible_) return;
  markers_visible_ = visible;
  rebuild_marker_lanes();
}

void TimelineController::clear_markers() {
  markers_.clear();
  rebuild_marker_lanes();
}

void TimelineController::set_show_all_markers(bool all) {
  if (all == show_all_markers_) return;
  show_all_markers_ = all;
  rebuild_marker_lanes();
}

void TimelineController::set_marker_limit(std::size_t limit) {
  marker_limit_ = std::max<std::size_t>(1, limit);
  rebuild_marker_lanes();
}

std::size_t TimelineController::memory_bytes() const {
  std::size_t b = sizeof(*this) + tracks_.capacity() * sizeof(Track) + counter_max_.capacity() * sizeof(std::int64_t);
  for (const auto& t : tracks_) b += t.label.capacity();
  for (const auto& ix : counter_index_) b += sizeof(ix) + ix.memory_bytes();
  for (const auto& ix : span_index_) b += sizeof(ix) + ix.capacity() * sizeof(TimeNs);
  for (const auto& ix : cover_index_) b += sizeof(ix) + ix.memory_bytes();
  for (const auto& lod : span_lod_) b += sizeof(lod) + lod.memory_bytes();
  return b;
}

int TimelineController::fit_rows_to_height() {
  open_all_ranks(tracks_);  // from the rows as they are, ranks unfolded
  const float visible = height_ - kRulerHeight;
  const auto stream_kind = [&](const Track& t) { return profile_.stream_tracks[static_cast<std::size_t>(t.index)].kind; };
  const auto is_module_lane = [&](const Track& t) {  // modules and annotations on a CPU thread
    if (t.kind != TrackKind::Ranges) return false;
    const RangeTrack& rt = profile_.range_tracks[static_cast<std::size_t>(t.index)];
    return !rt.operators && rt.stream_id == kNoRow;
  };
  const auto module_depth = [&](const Track& t) {
    return is_module_lane(t) ? profile_.range_tracks[static_cast<std::size_t>(t.index)].depth : -1;
  };
  const auto is_comm = [&](const Track& t) { return t.kind == TrackKind::Stream && stream_kind(t) == StreamKind::Nccl; };
  const std::vector<std::function<bool(const Track&)>> levels = {
      [](const Track& t) { return t.kind == TrackKind::Memory; },
      [&](const Track& t) {
        if (t.kind == TrackKind::Stream) return stream_kind(t) != StreamKind::Compute && stream_kind(t) != StreamKind::Nccl;
        return t.kind == TrackKind::Ranges && !is_module_lane(t);
      },
      [&](const Track& t) { return module_depth(t) >= 3; },
      [&](const Track& t) { return module_depth(t) >= 1; },
      [&](const Track& t) { return module_depth(t) >= 0 || t.kind == TrackKind::Steps; },
      [&](const Track& t) { return t.kind == TrackKind::Stream && stream_kind(t) == StreamKind::Compute; },
  };
  const auto fits = [&] { return total_tracks_height(tracks_) <= visible; };
  std::vector<std::vector<std::size_t>> changed(levels.size());
  std::size_t applied = 0;
  for (; applied < levels.size() && !fits(); ++applied)
    for (std::size_t i = 0; i < tracks_.size(); ++i)
      if (!tracks_[i].collapsed && tracks_[i].laid_out() && levels[applied](tracks_[i])) {
        tracks_[i].collapsed = true;
        changed[applied].push_back(i);
      }
  // Still too many ranks: each folds to its first row and its compute and communication streams.
  bool ranks_folded = false;
  if (!fits()) {
    std::vector<bool> keep(tracks_.size());
    for (std::size_t i = 0; i < tracks_.size(); ++i)
      keep[i] = is_comm(tracks_[i]) || (tracks_[i].kind == TrackKind::Stream && stream_kind(tracks_[i]) == StreamKind::Compute);
    int last_rank = -1;
    for (std::size_t i = 0; i < tracks_.size(); ++i) {
      if (tracks_[i].rank == last_rank || !tracks_[i].laid_out()) continue;
      last_rank = tracks_[i].rank;
      if (!keep[i]) set_rank_open(tracks_, i, false, keep);
    }
    ranks_folded = true;
  }
  // Give the room left back to the rows folded last, a whole level at a time (the last level
  // applied was needed, unless the ranks were folded after it).
  for (std::size_t l = ranks_folded ? applied : applied - (applied > 0 ? 1 : 0); l-- > 0;) {
    for (std::size_t i : changed[l]) tracks_[i].collapsed = false;
    if (!fits())
      for (std::size_t i : changed[l]) tracks_[i].collapsed = true;
  }
  int n = 0;
  for (const Track& t : tracks_) n += t.collapsed || !t.laid_out();
  clamp_scroll();
  return n;
}

void TimelineController::set_size(float width, float height) {
  width_ = std::max(width, kLabelWidth + 10);
  height_ = std::max(height, kRulerHeight + 10);
  viewport_.width_px = width_ - kLabelWidth;
  clamp_scroll();
}

void TimelineController::fit_all() {
  const double span = static_cast<double>(profile_.time_end - profile_.time_begin);
  viewport_.fit(static_cast<double>(profile_.time_begin) - span * 0.01, static_cast<double>(profile_.time_end) + span * 0.01);
}

void TimelineController::clamp_view() {
  const double b = static_cast<double>(profile_.time_begin);
  const double e = std::max(static_cast<double>(profile_.time_end), b + 1);
  const double margin = (e - b) * kViewMargin;
  const double lo = b - margin, hi = e + margin;
  viewport_.ns_per_px = std::min(viewport_.ns_per_px, std::max(Viewport::kMinNsPerPx, (hi - lo) / std::max(1.0, viewport_.width_px)));
  const double visible = viewport_.width_px * viewport_.ns_per_px;
  viewport_.start_ns = std::clamp(viewport_.start_ns, lo, std::max(lo, hi - visible));
}

Scrollbar TimelineController::scrollbar() const {
  Scrollbar s;
  const float content = total_tracks_height(tracks_);
  const float visible = height_ - kRulerHeight;
  s.max_scroll = std::max(0.0f, content - visible);
  s.visible = s.max_scroll > 0;
  s.x0 = width_ - kScrollbarWidth;
  s.x1 = width_;
  s.y0 = kRulerHeight;
  s.y1 = height_;
  const float trough = s.y1 - s.y0;
  const float len = s.visible ? std::min(trough, std::max(20.0f, trough * visible / content)) : trough;
  s.thumb_y0 = s.y0 + (s.visible ? (trough - len) * std::clamp(scroll_y_ / s.max_scroll, 0.0f, 1.0f) : 0.0f);
  s.thumb_y1 = s.thumb_y0 + len;
  return s;
}

void TimelineController::scroll_to_thumb(float thumb_top) {
  const Scrollbar s = scrollbar();
  const float free = (s.y1 - s.y0) - (s.thumb_y1 - s.thumb_y0);
  scroll_y_ = free > 0 ? (thumb_top - s.y0) / free * s.max_scroll : 0.0f;
  clamp_scroll();
}

void TimelineController::clamp_scroll() {
  const float content = total_tracks_height(tracks_);
  const float visible = height_ - kRulerHeight;
  scroll_y_ = std::clamp(scroll_y_, 0.0f, std::max(0.0f, content - visible));
}

std::int32_t TimelineController::track_at(float y) const {
  if (y < kRulerHeight) return -1;
  const float ty = y - kRulerHeight;
  // Pinned tracks are on top of the scrolled ones, so look at them first.
  auto rects = layout_tracks(tracks_, scroll_y_);
  float pinned_bottom = 0;
  for (const auto& r : rects)
    if (tracks_[static_cast<std::size_t>(r.track)].pinned) pinned_bottom = std::max(pinned_bottom, r.y + r.height);
  for (const auto& r : rects) {
    const bool pinned = tracks_[static_cast<std::size_t>(r.track)].pinned;
    if (!pinned && ty < pinned_bottom) continue;
    if (ty >= r.y && ty < r.y + r.height) return r.track;
  }
  return -1;
}

float TimelineController::track_y(std::int32_t track) const {
  for (const auto& r : layout_tracks(tracks_, scroll_y_))
    if (r.track == track) return r.y + kRulerHeight;
  return -1;
}

void TimelineController::build_track(const Track& t, TrackDraw& d) const {
  d.spans.clear();
  d.bars.clear();
  d.density.clear();
  const auto ti = static_cast<std::size_t>(&t - tracks_.data());
  switch (t.kind) {
    case TrackKind::Stream: {
      const StreamTrack& st = profile_.stream_tracks[static_cast<std::size_t>(t.index)];
      build_span_track(st.events, st.max_duration, t.ends_sorted, span_index_[ti], cover_index_[ti], span_lod_[ti], viewport_, d.spans, d.density);
      break;
    }
    case TrackKind::Ranges: {
      const RangeTrack& rt = profile_.range_tracks[static_cast<std::size_t>(t.index)];
      build_span_track(rt.events, rt.max_duration, t.ends_sorted, span_index_[ti], cover_index_[ti], span_lod_[ti], viewport_, d.spans, d.density);
      break;
    }
    case TrackKind::Markers: {
      const MarkerLane& lane = marker_lanes_[static_cast<std::size_t>(t.index)];
      build_span_items(lane.spans, lane.max_duration, false, viewport_, d.spans);
      break;
    }
    case TrackKind::Steps: {
      const auto& steps = profile_.ranks[static_cast<std::size_t>(t.index)].steps;
      build_span_items(steps, max_duration_of(steps), false, viewport_, d.spans);
      build_density(steps, cover_index_[ti], d.spans, viewport_, d.density);
      break;
    }
    case TrackKind::Memory:
      if (!t.collapsed) {
        build_counter_bars(profile_.ranks[static_cast<std::size_t>(t.index)].memory, viewport_, d.bars, &counter_index_[ti]);
      }
      break;
    case TrackKind::Counter:
      if (!t.collapsed)
        build_counter_bars(overlay_counters_[static_cast<std::size_t>(t.index)].points, viewport_, d.bars, &counter_index_[ti]);
      break;
  }
}

void TimelineController::build_frame(Frame& frame) const {
  const auto rects = layout_tracks(tracks_, scroll_y_);
  const float visible = height_ - kRulerHeight;
  std::size_t n = 0;
  frame.items = 0;
  for (int pass = 0; pass < 2; ++pass)  // unpinned first, pinned drawn last (on top)
    for (const auto& r : rects) {
      const Track& t = tracks_[static_cast<std::size_t>(r.track)];
      if (t.pinned != (pass == 1)) continue;
      if (r.y + r.height < 0 || r.y > visible) continue;  // off screen: no work
      if (frame.tracks.size() <= n) frame.tracks.emplace_back();
      TrackDraw& d = frame.tracks[n++];
      d.track = r.track;
      d.y = r.y + kRulerHeight;
      d.height = r.height;
      d.bar_max = counter_max_[static_cast<std::size_t>(r.track)];
      build_track(t, d);
      frame.items += d.spans.size() + d.bars.size() + d.density.size();
    }
  frame.tracks.resize(n);
}

EventRef TimelineController::event_at(float x, float y) const {
  if (!in_event_area(x, y)) return {};
  const std::int32_t ti = track_at(y);
  if (ti < 0) return {};
  const Track& t = tracks_[static_cast<std::size_t>(ti)];
  if (t.kind != TrackKind::Stream && t.kind != TrackKind::Ranges) return {};
  TrackDraw d;
  build_track(t, d);
  const int hit = hit_test(d.spans, x - kLabelWidth, 2.0f, max_item_width(d.spans));
  if (hit < 0) return {};
  const SpanItem& s = d.spans[static_cast<std::size_t>(hit)];
  if (s.count != 1) return {};
  return {t.kind, t.index, s.first};
}

bool TimelineController::mouse_move(float x, float y) {
  mouse_x_ = x;
  mouse_y_ = y;
  bool changed = false;
  if (drag_.active && drag_.scrollbar) {
    const float before = scroll_y_;
    scroll_to_thumb(y - drag_.grab);
    return scroll_y_ != before;
  }
  if (drag_.active) {
    if (std::abs(x - drag_.x) > kClickSlop || std::abs(y - drag_.y) > kClickSlop) drag_.moved = true;
    if (drag_.moved) {
      if (drag_.box) {
        box_.active = true;
        box_.t0 = viewport_.time_at(drag_.x - kLabelWidth);
        box_.t1 = viewport_.time_at(x - kLabelWidth);
        box_.y0 = drag_.y;
        box_.y1 = y;
      } else {
        viewport_.pan_px(x - drag_.last_x);
        clamp_view();
        scroll_y_ -= y - drag_.last_y;
        clamp_scroll();
      }
      changed = true;
    }
    drag_.last_x = x;
    drag_.last_y = y;
  }
  const EventRef h = drag_.active ? EventRef{} : event_at(x, y);
  if (!(h == hovered_)) {
    hovered_ = h;
    changed = true;
  }
  const int m = drag_.active ? -1 : marker_at(x, y);
  if (m != hovered_marker_) {
    hovered_marker_ = m;
    changed = true;
  }
  return changed;
}

bool TimelineController::mouse_leave() {
  mouse_x_ = mouse_y_ = -1;
  const bool changed = hovered_.valid() || hovered_marker_ >= 0;
  hovered_ = {};
  hovered_marker_ = -1;
  return changed;
}

int TimelineController::marker_at(float x, float y) const {
  if (!in_event_area(x, y)) return -1;
  const std::int32_t ti = track_at(y);
  if (ti < 0 || tracks_[static_cast<std::size_t>(ti)].kind != TrackKind::Markers) return -1;
  TrackDraw d;
  build_track(tracks_[static_cast<std::size_t>(ti)], d);
  const int hit = hit_test(d.spans, x - kLabelWidth, 2.0f, max_item_width(d.spans));
  if (hit < 0 || d.spans[static_cast<std::size_t>(hit)].count != 1) return -1;
  const MarkerLane& lane = marker_lanes_[static_cast<std::size_t>(tracks_[static_cast<std::size_t>(ti)].index)];
  return static_cast<int>(lane.spans[d.spans[static_cast<std::size_t>(hit)].first].marker);
}

bool TimelineController::mouse_press(float x, float y, MouseButton button, bool shift) {
  mouse_x_ = x;
  mouse_y_ = y;
  if (const Scrollbar sb = scrollbar(); sb.visible && x >= sb.x0 && y >= sb.y0 && button == MouseButton::Left) {
    drag_ = {};
    drag_.active = drag_.scrollbar = true;
    drag_.button = button;
    const bool on_thumb = y >= sb.thumb_y0 && y < sb.thumb_y1;
    drag_.grab = on_thumb ? y - sb.thumb_y0 : (sb.thumb_y1 - sb.thumb_y0) / 2;  // trough: centre the thumb there
    if (!on_thumb) scroll_to_thumb(y - drag_.grab);
    return !on_thumb;
  }
  if (x < kLabelWidth && y >= kRulerHeight && button == MouseButton::Left) {
    const std::int32_t ti = track_at(y);
    if (ti < 0) return false;
    Track& t = tracks_[static_cast<std::size_t>(ti)];
    if (t.kind == TrackKind::Markers && !shift && x >= kLabelWidth - kMarkerHideButton) {
      set_markers_visible(false);
      return true;
    }
    if (t.kind == TrackKind::Markers && !shift && x >= kLabelWidth - kMarkerHideButton - kMarkerAllButton) {
      set_show_all_markers(!show_all_markers_);
      return true;
    }
    if (shift)
      t.pinned = !t.pinned;
    else if (t.rank_head && !t.rank_open) {  // a folded rank's head unfolds it
      set_rank_open(tracks_, static_cast<std::size_t>(ti), true, {});
    } else if (t.group_size > 1)  // a folded group's head opens or folds the group
      set_group_open(tracks_, static_cast<std::size_t>(ti), !t.group_open);
    else
      t.collapsed = !t.collapsed;
    clamp_scroll();
    return true;
  }
  if (!in_event_area(x, y)) return false;
  drag_ = {};
  drag_.active = true;
  drag_.button = button;
  drag_.box = button == MouseButton::Right || (button == MouseButton::Left && shift);
  drag_.x = drag_.last_x = x;
  drag_.y = drag_.last_y = y;
  return false;
}

void TimelineController::finish_box(float, float) {
  const double a = std::min(box_.t0, box_.t1), b = std::max(box_.t0, box_.t1);
  range_ = std::make_pair(static_cast<TimeNs>(std::floor(a)), static_cast<TimeNs>(std::ceil(b)));
  // The stream tracks under the box; every stream when the box covers none.
  std::vector<std::int32_t> streams;
  const float y0 = std::min(box_.y0, box_.y1), y1 = std::max(box_.y0, box_.y1);
  for (const auto& r : layout_tracks(tracks_, scroll_y_)) {
    const Track& t = tracks_[static_cast<std::size_t>(r.track)];
    const float ty = r.y + kRulerHeight;
    if (t.kind == TrackKind::Stream && ty + r.height > y0 && ty < y1) streams.push_back(t.index);
  }
  if (streams.empty())
    for (const auto& t : tracks_)
      if (t.kind == TrackKind::Stream) streams.push_back(t.index);
  aggregate_ = aggregate_range(profile_, streams, range_->first, range_->second);
  if (on_aggregate) on_aggregate(*aggregate_);
}

bool TimelineController::mouse_release(float x, float y, MouseButton button) {
  if (!drag_.active || drag_.button != button) return false;
  const Drag d = drag_;
  drag_.active = false;
  if (d.scrollbar) return false;
  if (d.moved) {
    if (d.box && box_.active) finish_box(x, y);
    return true;
  }
  // A click.
  if (!in_event_area(x, y)) return false;
  const std::int32_t ti = track_at(y);
  if (ti >= 0) {
    const Track& t = tracks_[static_cast<std::size_t>(ti)];
    if (t.kind == TrackKind::Stream || t.kind == TrackKind::Ranges) {
      TrackDraw draw;
      build_track(t, draw);
      const int hit = hit_test(draw.spans, x - kLabelWidth, 2.0f, max_item_width(draw.spans));
      if (hit >= 0) {
        const SpanItem& s = draw.spans[static_cast<std::size_t>(hit)];
        if (s.count == 1) {
          select({t.kind, t.index, s.first}, false);
        } else {  // a folded run: zoom into it
          const EventInfo a = event_info(profile_, {t.kind, t.index, s.first});
          const EventInfo b = event_info(profile_, {t.kind, t.index, s.first + s.count - 1});
          const double pad = static_cast<double>(b.end - a.start) * 0.05 + 1;
          viewport_.fit(static_cast<double>(a.start) - pad, static_cast<double>(std::max(a.end, b.end)) + pad);
          clamp_view();
        }
        return true;
      }
    }
  }
  if (selected_.valid()) {
    select({}, false);
    return true;
  }
  return false;
}

bool TimelineController::wheel(float x, float y, float steps, bool ctrl, bool shift) {
  if (ctrl) {
    const float ax = x >= kLabelWidth ? x - kLabelWidth : static_cast<float>(viewport_.width_px / 2);
    viewport_.zoom_around(ax, std::pow(kZoomStep, steps));
  } else if (shift) {
    viewport_.pan_px(steps * 0.5 * kPanFraction * viewport_.width_px);
  } else {
    scroll_y_ -= steps * 3 * kRowHeight;
    clamp_scroll();
  }
  clamp_view();
  mouse_move(x, y);
  return true;
}

bool TimelineController::key(char k, bool ctrl, bool shift) {
  (void)ctrl;
  (void)shift;
  const bool mouse_in = mouse_x_ >= kLabelWidth && mouse_x_ <= width_;
  const float ax = mouse_in ? mouse_x_ - kLabelWidth : static_cast<float>(viewport_.width_px / 2);
  switch (k) {
    case 'W': viewport_.zoom_around(ax, kZoomStep); clamp_view(); return true;
    case 'S': viewport_.zoom_around(ax, 1 / kZoomStep); clamp_view(); return true;
    case 'A': viewport_.pan_px(kPanFraction * viewport_.width_px); clamp_view(); return true;
    case 'D': viewport_.pan_px(-kPanFraction * viewport_.width_px); clamp_view(); return true;
    case 'M':
      if (markers_.empty()) return false;
      set_markers_visible(!markers_visible_);
      return true;
    case 27:
      box_ = {};
      range_.reset();
      if (aggregate_) {
        aggregate_.reset();
        if (on_aggregate_cleared) on_aggregate_cleared();
      }
      select({}, false);
      return true;
    default: return false;
  }
}

void TimelineController::reveal(const EventInfo& e) {
  const double dur = static_cast<double>(std::max<TimeNs>(1, e.end - e.start));
  const double x0 = viewport_.x_of(static_cast<double>(e.start)), x1 = viewport_.x_of(static_cast<double>(e.end));
  const bool visible = x0 >= 0 && x1 <= viewport_.width_px && x1 - x0 >= kMinVisiblePx;
  if (!visible) {
    viewport_.fit(static_cast<double>(e.start) - dur, static_cast<double>(e.end) + dur);
    clamp_view();
  }
}

void TimelineController::show_range(TimeNs t0, TimeNs t1, int rank) {
  if (t1 < t0) std::swap(t0, t1);
  // An instant (a memory peak, a marker of no width) is shown centred in a window wide enough to
  // see what runs around it (0.5 % of the profile, at least 20 us) instead of a 2 ns view.
  const double width = static_cast<double>(t1 - t0);
  const double span = static_cast<double>(profile_.time_end - profile_.time_begin);
  const double margin = width < 1'000.0 ? std::max(10'000.0, span * 0.0025) - width / 2 : width * 0.05;
  // Not clamped to the profile (clamp_view is for input): a jump keeps its time at the centre,
  // which linked views (the memory chart's click) rely on.
  viewport_.fit(static_cast<double>(t0) - margin, static_cast<double>(t1) + margin);
  if (rank < 0) return;
  for (std::size_t i = 0; i < tracks_.size(); ++i)
    if (tracks_[i].rank == rank) {
      const float y = track_y(static_cast<std::int32_t>(i));
      if (y >= 0) scroll_y_ += y - kRulerHeight;
      clamp_scroll();
      return;
    }
}

void TimelineController::select(const EventRef& ref, bool reveal_it) {
  selected_ = ref;
  peers_ = ref.valid() ? collective_peers(profile_, ref) : std::vector<EventRef>{};
  if (ref.valid() && reveal_it) {
    reveal(event_info(profile_, ref));
    // Scroll the event's track into view.
    for (std::size_t i = 0; i < tracks_.size(); ++i)
      if (tracks_[i].kind == ref.kind && tracks_[i].index == ref.track) {
        const float y = track_y(static_cast<std::int32_t>(i)) - kRulerHeight;
        if (y < 0 || y + kRowHeight > height_ - kRulerHeight) {
          scroll_y_ += y - (height_ - kRulerHeight) / 3;
          clamp_scroll();
        }
        if (tracks_[i].collapsed) tracks_[i].collapsed = false;
        if (tracks_[i].hidden)  // inside a folded group: open it
          for (std::size_t h = 0; h < i; ++h)
            if (tracks_[h].group == tracks_[i].group && tracks_[h].group_size > 0) set_group_open(tracks_, h, true);
        if (tracks_[i].folded)  // in a folded rank: unfold it
          for (std::size_t h = 0; h < tracks_.size(); ++h)
            if (tracks_[h].rank_head && tracks_[h].rank == tracks_[i].rank) set_rank_open(tracks_, h, true, {});
      }
  }
  if (on_selection_changed) on_selection_changed(selected_);
}

void TimelineController::select_module(std::int32_t module) {
  for (const RankModel& r : profile_.ranks)
    for (std::int32_t ti : r.range_tracks) {
      const auto& ev = profile_.range_tracks[static_cast<std::size_t>(ti)].events;
      for (std::size_t i = 0; i < ev.size(); ++i)
        if (ev[i].module == module && ev[i].kind == RangeKind::Module) {
          select({TrackKind::Ranges, ti, static_cast<std::uint32_t>(i)}, true);
          return;
        }
    }
}

void TimelineController::set_find_query(const std::string& query) {
  if (query == find_query_) return;
  find_query_ = query;
  find_results_ = find_events(profile_, query);
  find_cursor_ = -1;
}

bool TimelineController::find_next() {
  if (find_results_.empty()) return false;
  find_cursor_ = (find_cursor_ + 1) % static_cast<int>(find_results_.size());
  select(find_results_[static_cast<std::size_t>(find_cursor_)], true);
  return true;
}

bool TimelineController::find_previous() {
  if (find_results_.empty()) return false;
  const int n = static_cast<int>(find_results_.size());
  find_cursor_ = find_cursor_ <= 0 ? n - 1 : find_cursor_ - 1;
  select(find_results_[static_cast<std::size_t>(find_cursor_)], true);
  return true;
}

}  // namespace ss::timeline
