#include "profiler/sim/plan_file.h"

#include <sstream>

#include "profiler/sim/sim_report.h"
#include "storage/json_writer.h"

namespace ss::sim {

std::string plan_file_json(const FsdpPlan& plan, const SimResult& predicted, bool fits, const SimResult* baseline,
                           const std::string& strategy, std::int64_t budget, const std::vector<std::string>& second_models) {
  // Flatten: the plan's own keys at top level so `simulate --plan` reads the same file.
  std::string flat = plan_to_json(plan);
  flat.pop_back();  // drop the closing brace
  std::ostringstream f;
  JsonWriter tail(f, false);
  tail.begin_object()
      .kv("strategy", strategy)
      .kv("budget_bytes", budget)
      .kv("step_time_ms", to_ms(predicted.step_ns))
      .kv("peak_memory_bytes", predicted.peak_bytes);
  if (baseline)
    tail.kv("baseline_step_time_ms", to_ms(baseline->step_ns)).kv("baseline_peak_memory_bytes", baseline->peak_bytes);
  tail.kv("fits_budget", fits).end_object();
  std::ostringstream out;
  out << flat << ", \"predicted\": " << f.str() << ", \"fsdp2_python\": " << JsonWriter::quoted(plan_to_python(plan, second_models)) << "}\n";
  return out.str();
}

std::string plan_file_json(const FsdpPlan& plan, const PlanOutcome& o, const std::string& strategy, std::int64_t budget,
                           const std::vector<std::string>& second_models) {
  return plan_file_json(plan, o.result, o.fits, &o.baseline, strategy, budget, second_models);
}

}  // namespace ss::sim
