// The simulator-input options that `simulate` and `plan` share (IN or --model, --cluster, --plan,
// --fit, --world, --as-profiled), turned into a SimInputRequest with the same usage errors for both.
#pragma once

#include "app/cli/arg_parser.h"
#include "profiler/sim/sim_inputs.h"

namespace ss::cli {

sim::SimInputRequest sim_input_request(const ArgParser& p);

// --as-profiled: a profile with unobserved steps (record --steps A:B) is calibrated to them unless given.
inline constexpr const char* kAsProfiledHelp =
    "predict the job as it was profiled: no calibration to the profile's unobserved steps (record --steps A:B\n"
    "times the steps it does not profile; by default the replay is calibrated to them, the job without the profiler)";

// Plan knobs both commands take on top of --plan: --checkpoint-all MODE, --offload MODE,
// --offload-prefetch K, --pipelined-optimizer, --parallel SPEC, --micro-batches N.
void add_plan_knob_options(ArgParser& p);
// "tp=8,sp,pp=4,cp=2,ring,ep=8,v=2,interleaved" into `par` (unnamed items keep their values).
void parse_parallel_spec(const std::string& spec, sim::Parallelism& par);
// Applies the given knobs to `plan`; returns whether any was given.
bool apply_plan_knobs(const ArgParser& p, sim::FsdpPlan& plan);

}  // namespace ss::cli
