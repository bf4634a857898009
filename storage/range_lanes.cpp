#include "storage/range_lanes.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

namespace ss {

bool is_operator_range(RangeKind kind) {
  return kind == RangeKind::CpuOp || kind == RangeKind::Fsdp || kind == RangeKind::Nccl;
}

std::vector<int> pack_ranges(const std::vector<RangeEvent>& events) {
  std::vector<int> depth(events.size(), 0);
  std::vector<TimeNs> track_end;                // per track: where its last range ends
  std::vector<std::pair<TimeNs, int>> open;     // (end, depth) of ranges not yet ended
  for (std::size_t i = 0; i < events.size(); ++i) {
    const RangeEvent& e = events[i];
    std::erase_if(open, [&](const auto& o) { return o.first <= e.start; });
    int lowest = 0;  // below every range that encloses this one
    for (const auto& [end, d] : open)
      if (end >= e.end) lowest = std::max(lowest, d + 1);
    int d = lowest;
    while (d < static_cast<int>(track_end.size()) && track_end[static_cast<std::size_t>(d)] > e.start) ++d;
    if (d == static_cast<int>(track_end.size())) track_end.push_back(e.end);
    track_end[static_cast<std::size_t>(d)] = e.end;
    depth[i] = d;
    open.emplace_back(e.end, d);
  }
  return depth;
}

void lay_out_range_lanes(std::vector<RangeTrack>& tracks) {
  using Lane = std::tuple<int, RowId, RowId>;
  std::map<Lane, std::vector<std::size_t>> lanes;  // lane -> its tracks
  for (std::size_t i = 0; i < tracks.size(); ++i) lanes[{tracks[i].rank, tracks[i].thread_id, tracks[i].stream_id}].push_back(i);

  std::vector<RangeTrack> out;
  out.reserve(tracks.size());
  for (auto& [lane, members] : lanes) {
    for (const bool operators : {false, true}) {
      std::vector<RangeEvent> events;
      for (std::size_t i : members)
        for (const RangeEvent& e : tracks[i].events)
          if (is_operator_range(e.kind) == operators) events.push_back(e);
      if (events.empty()) continue;
      // Enclosing ranges first at one start; the id decides between equal ranges.
      std::sort(events.begin(), events.end(), [](const RangeEvent& a, const RangeEvent& b) {
        return std::tie(a.start, b.end, a.id) < std::tie(b.start, a.end, b.id);
      });
      const std::vector<int> depth = pack_ranges(events);
      const std::size_t first = out.size();
      for (std::size_t k = 0; k < events.size(); ++k) {
        const auto d = static_cast<std::size_t>(depth[k]);
        while (out.size() <= first + d) {
          RangeTrack t;
          std::tie(t.rank, t.thread_id, t.stream_id) = lane;
          t.depth = static_cast<int>(out.size() - first);
          t.operators = operators;
          out.push_back(std::move(t));
        }
        out[first + d].events.push_back(events[k]);
      }
    }
    for (std::size_t i : members) std::vector<RangeEvent>().swap(tracks[i].events);
  }
  tracks = std::move(out);
}

}  // namespace ss
