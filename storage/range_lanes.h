// How a lane's ranges become drawable tracks, one per depth: framework operators (aten::*, FSDP
// runtime calls, NCCL API calls) apart from the ranges that show the program's structure (module
// ranges, user annotations), each class packed on as few tracks as its nesting allows.
//  - On a CPU trace the two classes interleave (an autograd operator encloses a module's backward,
//    which encloses more operators), so one thread's module ranges spread over twenty depths and
//    the operators push the GPU streams and the other ranks off the first screen. Apart, the
//    modules take a few tracks and the operators fold behind one row.
//  - Backward module ranges overlap without nesting (a module's backward ends when its input
//    gradients arrive, after the next module's has begun): nesting depth (the `ranges` table's,
//    storage/range_nesting.h) puts each on a deeper track, a staircase as deep as the model.
//    Packed, a range goes on the first track below every range enclosing it that is free at
//    its start, so the staircase takes two tracks.
// Nothing in the file changes: `ranges` keeps its depth and parent over all of a lane's ranges.
#pragma once

#include <vector>

#include "storage/profile_model.h"

namespace ss {

// Framework operators (CpuOp, Fsdp, Nccl); the rest (Module, Annotation, GpuAnnotation) is structure.
bool is_operator_range(RangeKind kind);

// The track (0 = top) of each of `events`, given in (start ascending, end descending) order: the
// first track that is free at the event's start and lies below every event enclosing it. Events
// on one track never overlap.
std::vector<int> pack_ranges(const std::vector<RangeEvent>& events);

// Re-lays every lane (rank, thread, stream) as the tracks of its structure ranges, then those of
// its operators (RangeTrack::operators), each packed (RangeTrack::depth: the track within its
// class). Events are in start order within a track.
void lay_out_range_lanes(std::vector<RangeTrack>& tracks);

}  // namespace ss
