// `shardscope plan --search`: the what-if search over meshes, checkpointing, offload, micro-batches
// and unshard sets (profiler/sim/search.h), printed as a ranked table or a JSON array of plans.
#pragma once

#include "app/cli/arg_parser.h"
#include "profiler/sim/sim_inputs.h"

namespace ss::cli {

// The options only --search reads (--global-batch, --top, --json, --threads, --max-tp).
void add_search_options(ArgParser& p);
// Runs the search for an already parsed `plan` command line; returns the exit code.
int run_plan_search(const ArgParser& p, sim::SimInputRequest req);

}  // namespace ss::cli
