// Unshard advisor: asks the planner (profiler/sim, ss_sim) which FSDP units to keep unsharded
// (reshard_after_forward=False) so that the most exposed all-gather time is saved per byte of
// memory, within a per-rank budget: 90% of the smallest GPU memory among the profile's ranks,
// or, when no capacity is recorded, 125% of the simulated baseline peak. Every choice is judged
// by simulating the whole step, so units whose all-gather is already hidden are not chosen.
// The simulator reads the profile itself (its steps, modules and collectives) and, as `plan` and
// `simulate` do by default, fits the cluster to the profile's collectives; the selection does not
// apply to it.
#include <algorithm>
#include <cstdio>
#include <string>

#include "plugins/api/plugin_sdk.h"
#include "plugins/builtin/common/critical_path_walk.h"
#include "profiler/sim/fsdp_plan.h"
#include "profiler/sim/planner.h"
#include "profiler/sim/sim_inputs.h"
#include "profiler/sim/step_simulator.h"
#include "storage/errors.h"
#include "storage/units.h"

namespace {

constexpr double kBudgetShareOfGpu = 0.9;
constexpr double kBudgetOverBaselinePeak = 1.25;

void run(const ss::plugin::Host& host) {
  ss::sim::SimInputRequest req;
  req.profile_path = host.api()->profile_path(host.ctx());
  // The cluster `plan` and `simulate` use by default: fitted to the profile's own collectives when
  // it has any (the same predictions as `plan --strategy cost` for the same units).
  req.fit_if_available = true;
  ss::sim::SimInputs in;
  try {
    in = ss::sim::load_sim_inputs(req);
  } catch (const ss::ProfileError& e) {
    // A profile the simulator cannot replay (no FSDP units: a DDP trace; no module ranges) is an
    // answer about the profile, not a failure of the analysis: say why there is no advice.
    host.finding(SS_SEVERITY_INFO, std::string("no unshard advice for this profile: ") + e.what());
    return;
  }
  ss::sim::CompiledStep base = ss::sim::compile_step(in.model, in.plan, in.cluster);

  std::int64_t capacity = 0;
  for (const auto& r : host.ranks())
    if (r.gpu_memory_bytes > 0) capacity = capacity ? std::min(capacity, r.gpu_memory_bytes) : r.gpu_memory_bytes;
  ss::sim::PlanRequest pr;
  pr.strategy = ss::sim::Strategy::Cost;
  std::string budget_source;
  if (capacity > 0) {
    pr.budget_bytes = static_cast<std::int64_t>(kBudgetShareOfGpu * double(capacity));
    budget_source = "90% of GPU memory";
  } else {
    pr.budget_bytes = static_cast<std::int64_t>(kBudgetOverBaselinePeak * double(ss::sim::simulate(base).peak_bytes));
    budget_source = "125% of the simulated baseline peak (GPU memory unknown)";
  }
  if (pr.budget_bytes <= 0) {
    // No capacity recorded and a zero simulated peak (modules without parameter sizes).
    host.finding(SS_SEVERITY_INFO,
                 "no memory budget to plan against: the profile records neither GPU memory nor parameter sizes");
    return;
  }
  ss::sim::PlanOutcome o = ss::sim::plan_unshard(in.model, base, in.cluster, pr);
  ss::sim::FsdpPlan plan = in.plan;
  for (const auto& n : o.unsharded)
    if (std::find(plan.unsharded.begin(), plan.unsharded.end(), n) == plan.unsharded.end()) plan.unsharded.push_back(n);

  const double gain = o.baseline.step_ns > 0
                          ? 100.0 * double(o.baseline.step_ns - o.result.step_ns) / double(o.baseline.step_ns)
                          : 0.0;
  host.table("summary", {"strategy", "budget_bytes", "budget_from", "baseline_step_ns", "predicted_step_ns",
                         "gain_pct", "baseline_exposed_comm_ns", "predicted_exposed_comm_ns", "baseline_peak_bytes",
                         "predicted_peak_bytes", "fits_budget", "units_kept", "simulations", "cluster"});
  host.row({"cost", pr.budget_bytes, budget_source, o.baseline.step_ns, o.result.step_ns, gain,
            o.baseline.exposed_comm_ns, o.result.exposed_comm_ns, o.baseline.peak_bytes, o.result.peak_bytes,
            o.fits ? 1 : 0, static_cast<std::int64_t>(o.unsharded.size()), o.simulations,
            in.fitted ? in.cluster.name + ", fitted to the profile's collectives" : in.cluster.name});
  host.table("keep_unsharded", {"module"});
  for (const auto& n : o.unsharded) host.row({n});
  host.table("apply", {"fsdp2_python"});
  host.row({ss::sim::plan_to_python(plan, in.model.second_model_roots())});

  // Measured evidence beside the model's answer: each unit's all-gather time on the profile's
  // critical path (plugins/builtin/common/critical_path_walk.h). A unit the planner keeps
  // unsharded saves only what of its all-gathers the step really waited for.
  ss::analysis::ProfileAccess access(host);
  const ss::analysis::CriticalPath cp = ss::analysis::compute_critical_path(host, access);
  host.table("measured_evidence", {"unit", "all_gather_on_critical_path_ns", "all_gather_ns", "kept_unsharded"});
  for (const auto& u : cp.all_gathers) {
    const bool kept = std::find(o.unsharded.begin(), o.unsharded.end(), u.unit) != o.unsharded.end();
    host.row({u.unit, u.on_path_ns, u.all_gather_ns, kept ? "yes" : "no"});
  }
  for (const auto& n : o.unsharded) {
    const auto it = std::find_if(cp.all_gathers.begin(), cp.all_gathers.end(), [&](const auto& u) { return u.unit == n; });
    if (it == cp.all_gathers.end() || it->on_path_ns == 0)
      host.finding(SS_SEVERITY_INFO, "the planner keeps " + n + " unsharded, but none of its all-gathers is on the "
                                     "measured critical path: the measured gain may be smaller than predicted");
  }

  if (o.unsharded.empty()) {
    host.finding(SS_SEVERITY_INFO, "no unit is worth keeping unsharded within " + ss::format_bytes(pr.budget_bytes) + " per rank");
  } else {
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.1f%%", gain);
    host.finding(gain > 1 ? SS_SEVERITY_WARNING : SS_SEVERITY_INFO,
                 "keep " + ss::count_of(static_cast<std::int64_t>(o.unsharded.size()), "unit") + " unsharded: predicted step " +
                     ss::format_duration_ns(o.baseline.step_ns) + " -> " + ss::format_duration_ns(o.result.step_ns) + " (" + pct +
                     " faster), peak " + ss::format_bytes(o.result.peak_bytes));
  }
}

}  // namespace

SS_DEFINE_PLUGIN("unshard-advisor", "Unshard advisor (planner)",
                 "Which FSDP units to keep unsharded within 90% of GPU memory, chosen by the planner (most exposed "
                 "all-gather time saved per byte), with the predicted step time and peak.",
                 &run)
