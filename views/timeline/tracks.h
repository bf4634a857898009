// The rows of the timeline, per rank in the order an FSDP user reads them: the steps, the module
// and annotation lanes (one row per nesting depth), the compute streams, the communication
// streams (NCCL, gloo), the GPU range lanes, copy and other streams, the memory counter, and last
// the framework operator lanes (aten::*, FSDP runtime and NCCL API calls: storage/range_lanes.h),
// folded behind their first row, which opens them all. Rows can be collapsed (drawn thin),
// pinned (kept at the top while scrolling) and hidden (inside a folded group: not laid out).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "storage/profile_model.h"

namespace ss::timeline {

// Counter: an analysis plugin's counter track (TimelineController::set_overlay), not in the file.
// Markers: a rank's lane of analysis markers (marker_lanes.h), not in the file either.
enum class TrackKind : std::uint8_t { Steps, Ranges, Stream, Memory, Counter, Markers };

struct Track {
  TrackKind kind = TrackKind::Stream;
  int rank = 0;
  std::int32_t index = -1;  // Profile::stream_tracks / range_tracks index; rank index for steps/memory;
                            // the overlay counter's index for Counter; the marker lane's for Markers
  std::string label;
  bool collapsed = false;
  bool pinned = false;
  bool ends_sorted = true;  // see draw_items.h
  // Rows folded together: a rank's operator lanes of one thread. The group's first row (its head)
  // stays laid out and shows the outermost operators; the others are hidden until it is opened.
  std::int32_t group = -1;
  int group_size = 0;       // on a group's head: its rows, head included
  bool group_open = false;  // on a group's head
  bool hidden = false;      // inside a folded group
  // A rank folded to its first row (the head) and its communication streams, when the ranks do
  // not fit otherwise (TimelineController::fit_rows_to_height); a click on the head unfolds it.
  bool rank_head = false;   // the rank's first row, heading a folded rank
  bool rank_open = true;    // on a rank's head
  bool folded = false;      // folded away with its rank

  bool laid_out() const { return !hidden && !folded; }
  float height() const;
};

// Opens or folds the group whose head is tracks[head] (its other rows shown or hidden).
void set_group_open(std::vector<Track>& tracks, std::size_t head, bool open);
// Folds the rank of tracks[head] to that row and its communication streams (`keep`), or opens it.
void set_rank_open(std::vector<Track>& tracks, std::size_t head, bool open, const std::vector<bool>& keep);
// Unfolds every folded rank.
void open_all_ranks(std::vector<Track>& tracks);

inline constexpr float kRowHeight = 20.0f;
inline constexpr float kCounterHeight = 48.0f;
inline constexpr float kCollapsedHeight = 6.0f;

std::vector<Track> build_tracks(const Profile& profile);

// Where each track is drawn: pinned tracks first (they do not scroll), then the rest shifted by
// `scroll_y`; hidden tracks are not laid out. `y` is relative to the top of the track area.
struct TrackRect {
  std::int32_t track;
  float y;
  float height;
};
std::vector<TrackRect> layout_tracks(const std::vector<Track>& tracks, float scroll_y);
float total_tracks_height(const std::vector<Track>& tracks);

}  // namespace ss::timeline
