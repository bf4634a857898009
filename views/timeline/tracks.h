// The rows of the timeline: per rank, the step markers, the module/annotation range lanes (one
// row per nesting depth), the GPU compute streams, the NCCL streams, other streams and the memory
// counter. Rows can be collapsed (drawn thin) and pinned (kept at the top while scrolling).
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

  float height() const;
};

inline constexpr float kRowHeight = 20.0f;
inline constexpr float kCounterHeight = 48.0f;
inline constexpr float kCollapsedHeight = 6.0f;

std::vector<Track> build_tracks(const Profile& profile);

// Where each track is drawn: pinned tracks first (they do not scroll), then the rest shifted by
// `scroll_y`. `y` is relative to the top of the track area.
struct TrackRect {
  std::int32_t track;
  float y;
  float height;
};
std::vector<TrackRect> layout_tracks(const std::vector<Track>& tracks, float scroll_y);
float total_tracks_height(const std::vector<Track>& tracks);

}  // namespace ss::timeline
