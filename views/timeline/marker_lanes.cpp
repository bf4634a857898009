#include "views/timeline/marker_lanes.h"

#include <algorithm>
#include <numeric>

namespace ss::timeline {

std::vector<std::uint32_t> top_markers(const std::vector<OverlayMarker>& markers, std::size_t limit, bool all) {
  std::vector<std::uint32_t> idx(markers.size());
  std::iota(idx.begin(), idx.end(), 0u);
  if (all || markers.size() <= limit) return idx;
  auto longer = [&](std::uint32_t a, std::uint32_t b) {
    const OverlayMarker &x = markers[a], &y = markers[b];
    const TimeNs dx = x.end - x.start, dy = y.end - y.start;
    if (dx != dy) return dx > dy;
    if (x.start != y.start) return x.start < y.start;
    return a < b;
  };
  std::nth_element(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(limit), idx.end(), longer);
  idx.resize(limit);
  std::sort(idx.begin(), idx.end());
  return idx;
}

std::vector<MarkerLane> build_marker_lanes(const std::vector<OverlayMarker>& markers, const std::vector<std::uint32_t>& shown,
                                           const std::vector<int>& ranks) {
  std::vector<MarkerLane> lanes;
  for (int rank : ranks) {
    MarkerLane lane;
    lane.rank = rank;
    for (std::uint32_t i : shown) {
      const OverlayMarker& m = markers[i];
      if (m.rank != -1 && m.rank != rank) continue;
      const TimeNs end = std::max(m.start, m.end);
      lane.spans.push_back({m.start, end, i});
      lane.max_duration = std::max(lane.max_duration, end - m.start);
    }
    if (lane.spans.empty()) continue;
    std::stable_sort(lane.spans.begin(), lane.spans.end(), [](const MarkerSpan& a, const MarkerSpan& b) { return a.start < b.start; });
    lanes.push_back(std::move(lane));
  }
  return lanes;
}

}  // namespace ss::timeline
