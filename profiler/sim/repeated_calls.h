// Units called more than once in a forward-backward pass, as a recording's ranges show them: the
// model run on two inputs before one backward (a siamese loss, DPO's chosen and rejected), the
// trained model's no_grad forwards before its training forward (RLHF's rollouts, PPO's old
// log-probabilities), a block applied twice. FSDP2 gathers a unit at every call while it reshards
// after forward, and again for each backward through it after the first (its post-backward
// reshards in between); a plan that keeps the unit unsharded removes the forward re-gathers only.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "profiler/sim/sim_model.h"
#include "storage/types.h"

namespace ss::sim {

// A module range of an FSDP unit (profile_extract.cpp). own: the unit's own module's range, not
// another member's of a grouped unit (fully_shard([norm, output]) gathers once for both).
struct UnitRange {
  TimeNs start, end;
  int unit;
  RangePhase phase;
  bool own;
};

// Sets SimUnit::repeat_fwd_calls from the units' own forward ranges per pass (a forward inside the
// root's backward is not a call: torchtitan's chunked loss runs the head there and gathers it
// itself) and, where FSDP's ranges counted the gathers per pass (`counted`: fwd_gathers and
// bwd_gathers, by unit), splits the forward gathers beyond the calls' into extra_fwd_gathers and
// sets extra_bwd_gathers. Returns the units called more than once a pass.
int add_repeated_calls(SimModel& sm, const std::vector<UnitRange>& ranges, const std::vector<std::pair<TimeNs, TimeNs>>& steps,
                       int passes, bool counted, const std::vector<long>& fwd_gathers, const std::vector<long>& bwd_gathers);

// FSDP names a unit by its path in its own root, which a frozen model beside the trained one
// shares ("layers.0" is the teacher's and the student's "FSDPNet.layers.0"; "" the other root):
// the trained unit with the frozen unit's name, -1 if none. Work FSDP's ranges name for a
// frozen unit in backward is that unit's.
int trained_namesake(const SimModel& sm, std::size_t frozen);

}  // namespace ss::sim
