// Choosing which FSDP units to keep unsharded (reshard_after_forward=False) under a per-rank
// memory budget. Every candidate is judged by simulating the whole step, so a unit whose backward
// all-gather is hidden behind compute gains nothing and is not chosen by the cost strategy.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/sim/step_simulator.h"

namespace ss::sim {

enum class Strategy { Manual, Greedy, Cost, Exact };

struct PlanRequest {
  Strategy strategy = Strategy::Greedy;
  std::int64_t budget_bytes = 0;
  std::vector<std::string> modules;  // manual: the units to keep; others: restrict candidates (empty = all)
  int exact_max_candidates = 20;     // the exact solver refuses more (2^n simulations)
  // Plan activation checkpointing (full, per unit) jointly with unsharding: cost and exact only.
  bool checkpoint = false;
  // When nothing fits, try optimizer-state offload, then CPU offload (FSDP2 CPUOffloadPolicy).
  bool offload_if_needed = false;
};

struct PlanOutcome {
  std::vector<int> unsharded_exec;     // exec units kept unsharded (beyond the base plan)
  std::vector<std::string> unsharded;  // their module names (bucket members expanded)
  std::vector<int> checkpoint_exec;     // exec units checkpointed (full) by the plan (joint planning)
  std::vector<std::string> checkpointed;
  Offload offload = Offload::None;      // the offload the result uses (offload_if_needed may set it)
  SimResult baseline;                  // the base plan
  SimResult result;                    // with the chosen units kept
  bool fits = false;                   // result.peak_bytes <= budget
  int simulations = 0;
};

// `base` is the compiled base plan; candidates are its resharded, non-root units.
// Throws ProfileError(MalformedTable) for unknown --modules names or an exact instance too large.
PlanOutcome plan_unshard(const SimModel& model, const CompiledStep& base, const ClusterModel& cluster, const PlanRequest& req);

}  // namespace ss::sim
