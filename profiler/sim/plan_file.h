// The plan file that `shardscope plan -o` and the GUI's Unshard panel export: the plan's own keys
// at top level (so `simulate --plan` reads the same file), the prediction, and the FSDP2 Python.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/sim/fsdp_plan.h"
#include "profiler/sim/planner.h"

namespace ss::sim {

// `o` supplies the prediction (result) and the baseline; `strategy` is recorded as given;
// `second_models` go to the Python (plan_to_python).
std::string plan_file_json(const FsdpPlan& plan, const PlanOutcome& o, const std::string& strategy, std::int64_t budget,
                           const std::vector<std::string>& second_models = {});
// The same from a prediction alone (`plan --search`); the baseline keys only when `baseline` is given.
std::string plan_file_json(const FsdpPlan& plan, const SimResult& predicted, bool fits, const SimResult* baseline,
                           const std::string& strategy, std::int64_t budget, const std::vector<std::string>& second_models = {});

}  // namespace ss::sim
