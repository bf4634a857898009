// An analysis's markers (time ranges it points at) on lanes of their own, one per rank, instead
// of bands painted over every track: a whole-profile `overlap` or `idle-gaps` run yields
// hundreds of them. By default only the longest kDefaultMarkerLimit are shown.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "storage/types.h"

namespace ss::timeline {

struct OverlayMarker {
  TimeNs start = 0;
  TimeNs end = 0;
  int rank = -1;  // -1: every rank
  std::string label;
};

inline constexpr std::size_t kDefaultMarkerLimit = 50;

// One marker on a lane (the event type the folding code draws).
struct MarkerSpan {
  TimeNs start;
  TimeNs end;
  std::uint32_t marker;  // index in the overlay's markers
};

struct MarkerLane {
  int rank = 0;
  std::vector<MarkerSpan> spans;  // sorted by start
  TimeNs max_duration = 0;
};

// Indices of the markers to show, in their original order: every one when `all`, else the
// `limit` longest (ties: the earlier start, then the earlier index).
std::vector<std::uint32_t> top_markers(const std::vector<OverlayMarker>& markers, std::size_t limit, bool all);

// One lane per rank in `ranks` that has a shown marker; a rank -1 marker goes on every lane.
// Lanes come in the order of `ranks`.
std::vector<MarkerLane> build_marker_lanes(const std::vector<OverlayMarker>& markers, const std::vector<std::uint32_t>& shown,
                                           const std::vector<int>& ranks);

}  // namespace ss::timeline
