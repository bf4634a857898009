// Which timeline rows the Compare view folds: a compared timeline is about a third of the
// window high, and on a trace every rank starts with several CPU lanes of framework operators
// (aten::*, FSDP runtime calls) that pushed the GPU streams out of sight. Folding draws those
// lanes thin (Track::collapsed); CPU lanes that carry module ranges stay open, so the module
// structure and the GPU streams are both visible. Optionally every row of the ranks not compared
// is folded too (picking the compared rank's tracks).
#pragma once

#include "views/timeline/timeline_controller.h"

namespace ss::compareview {

// True for a CPU range lane (not on a GPU stream) of framework operators (CpuOp, Fsdp, Nccl), which
// the profile lays out apart from the module ranges (RangeTrack::operators).
bool is_cpu_operator_lane(const Profile& profile, const timeline::Track& track);

struct FoldOptions {
  bool cpu_operator_lanes = true;  // fold the CPU operator lanes
  int only_rank = -1;              // >= 0: fold every row of the other ranks
};
// Sets each row's folded state from `options` (rows neither rule folds are opened); returns how
// many rows changed.
int apply_folds(timeline::TimelineController& controller, const FoldOptions& options);

}  // namespace ss::compareview
