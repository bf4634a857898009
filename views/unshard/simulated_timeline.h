// The Unshard panel's timeline of the current prediction: the simulated step as an in-memory
// Profile (one representative rank: compute and NCCL lanes, module ranges, collectives, memory),
// the same profile `shardscope simulate -o` writes. It goes through the profile file format
// (write_simulated_profile, then load_profile) so the timeline sees exactly what a saved
// simulation shows; for the panel's step sizes that round trip takes a few milliseconds.
#pragma once

#include <memory>
#include <string>

#include "profiler/sim/sim_inputs.h"
#include "profiler/sim/step_simulator.h"
#include "storage/profile_model.h"

namespace ss::unshard {

// `scratch_path` is written and removed again; throws ProfileError when it cannot be written.
std::shared_ptr<const Profile> simulated_timeline_profile(const sim::SimInputs& in, const sim::CompiledStep& step,
                                                          const sim::SimResult& result, const std::string& scratch_path);

// A scratch file name private to this process (in the system's temporary directory).
std::string timeline_scratch_path();

}  // namespace ss::unshard
