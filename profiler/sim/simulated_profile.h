// Writes a simulation as a profile in the common format (origin = simulated, the plan, cluster and
// model summary in parameters_json): one representative rank with compute and NCCL lanes, module
// ranges, collectives, memory events and one step, so a simulated and a measured timeline can be
// opened side by side.
#pragma once

#include <string>

#include "profiler/sim/step_simulator.h"

namespace ss::sim {

struct SimulatedProfileInfo {
  std::string source_files;   // the input profile or model description
  std::string gpu_name;
  std::string parameters_json;  // {"plan": ..., "cluster": ..., "model": ...}
};

void write_simulated_profile(const std::string& path, const SimModel& model, const CompiledStep& step,
                             const SimResult& result, const SimulatedProfileInfo& info);

}  // namespace ss::sim
