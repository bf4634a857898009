// The timeline's state and input handling without Qt or ImGui: the widget forwards mouse, wheel
// and key input here (in logical pixels of the widget) and asks for a frame's draw lists. Tests
// and benchmarks drive this class directly.
//
// Layout: a label column of kLabelWidth pixels on the left, a time ruler of kRulerHeight pixels at
// the top; the event area is the rest.
//
// Input: W/S or Ctrl+wheel zoom around the cursor; A/D, Shift+wheel or a left drag pan; wheel
// scrolls the tracks; a left click selects (a folded box zooms into its run); a right drag or
// Shift+left drag selects a time range over the tracks it covers and aggregates their kernels;
// a click on a label collapses or expands the track, Shift+click pins it; Escape clears; M shows
// or hides the analysis markers. The vertical scrollbar (kScrollbarWidth at the right edge, over
// the event area, when the tracks do not fit) scrolls by dragging its thumb or clicking its trough.
// Pan and zoom stay within the profile's span plus kViewMargin of it on either side.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "storage/profile_model.h"
#include "views/timeline/analysis.h"
#include "views/timeline/density.h"
#include "views/timeline/draw_items.h"
#include "views/timeline/marker_lanes.h"
#include "views/timeline/span_lod.h"
#include "views/timeline/tracks.h"
#include "views/timeline/viewport.h"

namespace ss::timeline {

inline constexpr float kLabelWidth = 190.0f;
inline constexpr float kRulerHeight = 22.0f;
inline constexpr float kScrollbarWidth = 10.0f;
inline constexpr double kViewMargin = 0.05;  // of the profile's span, beyond either end
// Buttons at the right of a marker lane's label: show all / top N, and hide.
inline constexpr float kMarkerHideButton = 16.0f;     // [kLabelWidth - 16, kLabelWidth)
inline constexpr float kMarkerAllButton = 30.0f;      // [kLabelWidth - 46, kLabelWidth - 16)

struct TrackDraw {
  std::int32_t track = -1;
  float y = 0;  // widget coordinates (ruler included)
  float height = 0;
  std::vector<SpanItem> spans;
  std::vector<CounterBar> bars;
  std::vector<DensityColumn> density;  // shading under folded spans (stream and range tracks)
  std::int64_t bar_max = 0;  // scale of the counter track (its maximum over the whole profile)
};

struct Frame {
  std::vector<TrackDraw> tracks;  // visible tracks only, pinned last (drawn on top)
  std::size_t items = 0;          // spans + bars, for statistics
};

enum class MouseButton { Left, Right, Middle };

// What an analysis adds on top of the profile (the Analyses dock sets it from a plugin's result):
// time ranges marked on one rank's marker lane (or every rank's; OverlayMarker in
// marker_lanes.h), and extra counter tracks.
struct OverlayCounter {
  std::string label;  // shown as the track's name
  int rank = -1;      // drawn after that rank's tracks; -1: after all ranks
  std::string unit;
  std::vector<CounterPoint> points;  // value = round(v * value_scale), sorted by time
  double value_scale = 1;            // so that fractional values keep their precision as integers
};

// The vertical scrollbar, in widget coordinates; `visible` is false when every track fits.
struct Scrollbar {
  bool visible = false;
  float x0 = 0, x1 = 0;              // its column at the right edge
  float y0 = 0, y1 = 0;              // the trough: below the ruler to the bottom
  float thumb_y0 = 0, thumb_y1 = 0;  // thumb: its length is visible / content of the trough
  float max_scroll = 0;              // scroll_y range is [0, max_scroll]
};

class TimelineController {
 public:
  explicit TimelineController(const Profile& profile);

  const Profile& profile() const { return profile_; }
  const std::vector<Track>& tracks() const { return tracks_; }
  std::vector<Track>& tracks() { return tracks_; }
  const Viewport& viewport() const { return viewport_; }
  Viewport& viewport() { return viewport_; }
  float scroll_y() const { return scroll_y_; }
  void set_scroll_y(float y) {  // e.g. kept across a profile refresh with the same tracks
    scroll_y_ = y;
    clamp_scroll();
  }

  void set_size(float width, float height);
  void fit_all();
  // The rows of a profile's first screen: collapse (draw thin) the rows an FSDP user looks at
  // last until every rank fits the height, in this order: memory counters; folded operator groups,
  // GPU range lanes, copy and other streams; module and annotation lanes below the third; those
  // below the first; the outermost ones and the steps; compute streams. When the ranks still do
  // not fit, each is folded to its first row (a click unfolds it) and its compute and
  // communication streams. Then the room left goes back to the rows collapsed last, a level at a
  // time. Communication streams always stay open. Returns how many rows are collapsed or folded.
  int fit_rows_to_height();
  // Keeps the view inside the profile's span plus kViewMargin of it on either side: the scale is
  // at most that whole window over the width, and the start moves inside it.
  void clamp_view();
  Scrollbar scrollbar() const;

  // Input; each returns true when the view changed and needs a repaint.
  bool mouse_move(float x, float y);
  bool mouse_press(float x, float y, MouseButton button, bool shift);
  bool mouse_release(float x, float y, MouseButton button);
  bool wheel(float x, float y, float steps, bool ctrl, bool shift);
  bool key(char key, bool ctrl, bool shift);  // 'W','A','S','D','M', 27 (Escape)
  bool mouse_leave();  // the mouse left the widget: no hover (no tooltip)

  void build_frame(Frame& frame) const;

  // The event under a point, or an invalid ref.
  EventRef event_at(float x, float y) const;
  std::int32_t track_at(float y) const;  // index in tracks(), -1 when none
  float track_y(std::int32_t track) const;

  // Hover, selection, time-range selection.
  const EventRef& hovered() const { return hovered_; }
  int hovered_marker() const { return hovered_marker_; }  // index in markers(), -1 when none
  const EventRef& selected() const { return selected_; }
  void select(const EventRef& ref, bool reveal);
  void select_module(std::int32_t module);  // selects its first range on the first rank that has one
  // Moves the view to [t0, t1] (with a margin either side) and, when rank >= 0, scrolls that
  // rank's first track into view (the Analyses dock's jump to a finding).
  void show_range(TimeNs t0, TimeNs t1, int rank = -1);
  const std::optional<Aggregate>& aggregate() const { return aggregate_; }
  bool box_active() const { return box_.active; }
  std::pair<double, double> box_times() const { return {box_.t0, box_.t1}; }
  std::pair<float, float> box_ys() const { return {box_.y0, box_.y1}; }
  std::optional<std::pair<TimeNs, TimeNs>> range_selection() const { return range_; }
  const std::vector<EventRef>& peers() const { return peers_; }

  // Analysis overlay: replaces the previous one (markers and counter tracks); empty clears it.
  // The counter tracks are inserted after their rank's rows, the marker lanes at the top of their
  // rank (after its steps row); other rows keep their state. Markers are shown again.
  void set_overlay(std::vector<OverlayMarker> markers, std::vector<OverlayCounter> counters);
  const std::vector<OverlayMarker>& markers() const { return markers_; }
  const std::vector<OverlayCounter>& overlay_counters() const { return overlay_counters_; }
  // Marker lanes: shown or hidden (the markers are kept), cleared (dropped), the top N longest
  // or all of them.
  void set_markers_visible(bool visible);
  bool markers_visible() const { return markers_visible_; }
  void clear_markers();
  void set_show_all_markers(bool all);
  bool show_all_markers() const { return show_all_markers_; }
  void set_marker_limit(std::size_t limit);
  std::size_t marker_limit() const { return marker_limit_; }
  // Markers on the lanes (indices in markers()), in their original order.
  const std::vector<std::uint32_t>& shown_markers() const { return shown_markers_; }
  const std::vector<MarkerLane>& marker_lanes() const { return marker_lanes_; }
  // True when the track's folds are drawn as density (it has a coverage index).
  bool shaded(std::int32_t track) const {
    return track >= 0 && static_cast<std::size_t>(track) < cover_index_.size() && !cover_index_[static_cast<std::size_t>(track)].empty();
  }

  // Find (Ctrl+F in the widget).
  void set_find_query(const std::string& query);
  const std::string& find_query() const { return find_query_; }
  const std::vector<EventRef>& find_results() const { return find_results_; }
  int find_cursor() const { return find_cursor_; }
  bool find_next();
  bool find_previous();

  // Callbacks for the widget and the docks.
  std::function<void(const EventRef&)> on_selection_changed;
  std::function<void(const Aggregate&)> on_aggregate;
  std::function<void()> on_aggregate_cleared;  // Esc dropped the selected range and its aggregate
  std::function<void()> on_markers_changed;  // visibility, show-all or the markers themselves

  double x_of(double t) const { return kLabelWidth + viewport_.x_of(t); }
  // Memory the controller adds to the profile (counter indexes, tracks).
  std::size_t memory_bytes() const;

 private:
  bool in_event_area(float x, float y) const {
    if (x < kLabelWidth || y < kRulerHeight) return false;
    const Scrollbar sb = scrollbar();
    return !(sb.visible && x >= sb.x0);
  }
  int marker_at(float x, float y) const;  // index in markers_ of the marker under a point, or -1
  void build_track(const Track& t, TrackDraw& d) const;
  void reveal(const EventInfo& e);
  void clamp_scroll();
  void finish_box(float x, float y);
  void index_tracks();  // counter maxima and indexes, span indexes: per track, after tracks_ changes
  void rebuild_marker_lanes();  // after the markers, their visibility or the limit change
  void scroll_to_thumb(float thumb_top);

  const Profile& profile_;
  std::vector<Track> tracks_;
  std::vector<std::int64_t> counter_max_;  // per track (memory tracks)
  std::vector<CounterIndex> counter_index_;  // per track (memory tracks; empty otherwise)
  std::vector<std::vector<TimeNs>> span_index_;  // per stream/range track: build_span_index, or build_block_max_index for unsorted ends
  std::vector<CoverIndex> cover_index_;  // per stream, range and steps track (density.h)
  std::vector<SpanLod> span_lod_;  // per stream and range track whose ends are sorted (span_lod.h)
  std::vector<OverlayMarker> markers_;
  std::vector<std::uint32_t> shown_markers_;
  std::vector<MarkerLane> marker_lanes_;
  bool markers_visible_ = true;
  bool show_all_markers_ = false;
  std::size_t marker_limit_ = kDefaultMarkerLimit;
  std::vector<OverlayCounter> overlay_counters_;
  Viewport viewport_;
  float width_ = 1200, height_ = 800;
  float scroll_y_ = 0;

  EventRef hovered_, selected_;
  int hovered_marker_ = -1;
  std::vector<EventRef> peers_;
  std::optional<Aggregate> aggregate_;
  std::optional<std::pair<TimeNs, TimeNs>> range_;

  struct Drag {
    bool active = false;
    bool moved = false;
    MouseButton button = MouseButton::Left;
    bool box = false;
    bool scrollbar = false;  // dragging the scrollbar's thumb, grabbed `grab` below its top
    float grab = 0;
    float x = 0, y = 0, last_x = 0, last_y = 0;
  } drag_;
  struct Box {
    bool active = false;
    double t0 = 0, t1 = 0;
    float y0 = 0, y1 = 0;
  } box_;

  std::string find_query_;
  std::vector<EventRef> find_results_;
  int find_cursor_ = -1;
  float mouse_x_ = -1, mouse_y_ = -1;
};

}  // namespace ss::timeline
