// The simulator-input options that `simulate` and `plan` share (IN or --model, --cluster, --plan,
// --fit, --world), turned into a SimInputRequest with the same usage errors for both.
#pragma once

#include "app/cli/arg_parser.h"
#include "profiler/sim/sim_inputs.h"

namespace ss::cli {

sim::SimInputRequest sim_input_request(const ArgParser& p);

}  // namespace ss::cli
