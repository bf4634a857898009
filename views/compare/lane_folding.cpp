#include "views/compare/lane_folding.h"

namespace ss::compareview {

bool is_cpu_operator_lane(const Profile& p, const timeline::Track& t) {
  if (t.kind != timeline::TrackKind::Ranges || t.index < 0 || static_cast<std::size_t>(t.index) >= p.range_tracks.size()) return false;
  const RangeTrack& rt = p.range_tracks[static_cast<std::size_t>(t.index)];
  if (rt.stream_id != kNoRow) return false;
  // Operators (aten::*, FSDP runtime calls, NCCL API calls) and no module: annotation-only lanes
  // (steps, user NVTX ranges) are few and short, and stay open.
  bool operators = false;
  for (const RangeEvent& e : rt.events) {
    if (e.kind == RangeKind::Module) return false;
    operators = operators || e.kind == RangeKind::CpuOp || e.kind == RangeKind::Fsdp || e.kind == RangeKind::Nccl;
  }
  return operators;
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
  if (changed) c.set_scroll_y(c.scroll_y());  // re-clamp: the content got shorter or taller
  return changed;
}

}  // namespace ss::compareview
