#include "views/compare/lane_folding.h"

namespace ss::compareview {

bool is_cpu_operator_lane(const Profile& p, const timeline::Track& t) {
  if (t.kind != timeline::TrackKind::Ranges || t.index < 0 || static_cast<std::size_t>(t.index) >= p.range_tracks.size()) return false;
  const RangeTrack& rt = p.range_tracks[static_cast<std::size_t>(t.index)];
  return rt.operators && rt.stream_id == kNoRow;  // storage/range_lanes.h
}

int apply_folds(timeline::TimelineController& c, const FoldOptions& o) {
  int changed = 0;
  for (timeline::Track& t : c.tracks()) {
    const bool fold = (o.only_rank >= 0 && t.rank != o.only_rank) || (o.cpu_operator_lanes && is_cpu_operator_lane(c.profile(), t));
    if (t.collapsed != fold) {
      t.collapsed = fold;
      ++changed;
    }
  }
  open_all_ranks(c.tracks());  // CompareView fits a folded pane again (fit_rows_to_height)
  if (changed) c.set_scroll_y(c.scroll_y());  // re-clamp: the content got shorter or taller
  return changed;
}

}  // namespace ss::compareview
