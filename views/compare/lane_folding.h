// Which timeline rows the Compare view folds: a compared timeline is about a third of the
// window high, and on a trace every rank starts with several CPU lanes of framework operators
// (aten::*, FSDP runtime calls) that pushed the GPU streams out of sight. Folding draws those
// lanes thin (Track::collapsed); CPU lanes that carry module ranges stay open, so the module
// structure and the GPU streams are both visible.
#pragma once

#include "views/timeline/timeline_controller.h"

namespace ss::compareview {

// True for a CPU range lane (not on a GPU stream) with operator ranges (CpuOp, Fsdp, Nccl) and
// no module range.
bool is_cpu_operator_lane(const Profile& profile, const timeline::Track& track);
// Folds (or unfolds) the CPU operator lanes of `controller`; returns how many lanes changed.
int fold_cpu_operator_lanes(timeline::TimelineController& controller, bool fold);

}  // namespace ss::compareview
