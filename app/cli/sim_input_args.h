// The simulator-input options that `simulate` and `plan` share (IN or --model, --cluster, --plan,
// --fit, --world), turned into a SimInputRequest with the same usage errors for both.
#pragma once

#include "app/cli/arg_parser.h"
#include "profiler/sim/sim_inputs.h"

namespace ss::cli {

sim::SimInputRequest sim_input_request(const ArgParser& p);

// Plan knobs both commands take on top of --plan: --checkpoint-all MODE, --offload MODE,
// --offload-prefetch K, --pipelined-optimizer, --parallel SPEC, --micro-batches N.
void add_plan_knob_options(ArgParser& p);
// "tp=8,sp,pp=4,cp=2,ring,ep=8,v=2,interleaved" into `par` (unnamed items keep their values).
void parse_parallel_spec(const std::string& spec, sim::Parallelism& par);
// Applies the given knobs to `plan`; returns whether any was given.
bool apply_plan_knobs(const ArgParser& p, sim::FsdpPlan& plan);

}  // namespace ss::cli
