// shardscope plan (IN | --model M.json) --budget 70GiB [--world N] [--cluster C.json] [--plan BASE.json]
//                 [--strategy greedy|cost|exact] [--modules A,B,...] [-o plan.json] [--format text|json]
//        shardscope plan (IN | --model M.json) --search [--budget B] [--world N] [--global-batch G] [--top N] [--json]
#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>

#include "app/cli/arg_parser.h"
#include "app/cli/command.h"
#include "app/cli/critical_path_evidence.h"
#include "app/cli/plan_search.h"
#include "app/cli/sim_input_args.h"
#include "profiler/sim/bucket_planner.h"
#include "profiler/sim/plan_file.h"
#include "profiler/sim/planner.h"
#include "profiler/sim/sim_inputs.h"
#include "profiler/sim/sim_report.h"
#include "storage/cpu_device.h"
#include "storage/json_writer.h"
#include "storage/units.h"

namespace ss::cli {
namespace {

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!s.empty()) out.push_back(cur);
  return out;
}

// Whether the plan keeps every unit with parameters unsharded after forward.
bool every_unit_unsharded(const sim::CompiledStep& s) {
  bool any = false;
  for (const auto& u : s.units) {
    if (u.is_root || u.params == 0) continue;
    any = true;
    if (u.reshard != sim::kKeepUnsharded) return false;
  }
  return any;
}

}  // namespace

int cmd_plan(const std::vector<std::string>& args) {
  ArgParser p("plan", "Choose which FSDP units to keep unsharded (reshard_after_forward=False) under a per-rank memory\n"
                      "budget, judging every choice by simulating the step. Strategies: manual (--modules lists the units\n"
                      "to keep), greedy (reverse forward order, splitting a module that does not fit into its units,\n"
                      "stopping at the budget), cost (most exposed all-gather time saved per byte), exact (all subsets;\n"
                      "small models or --modules). --search: the whole space of meshes (dp, tp, pp, cp, ep), checkpointing,\n"
                      "offload, micro-batches and unshard sets, ranked.");
  p.positional("IN", "a profile (omit with --model)", false)
      .option("model", "M.json", "model description instead of a profile")
      .option("budget", "BYTES", "per-rank memory budget, e.g. 70GiB")
      .option("world", "N", "world size", "0")
      .option("cluster", "C.json", "cluster model")
      .option("plan", "BASE.json", "base plan (buckets, ZeRO stage, HSDP ...) to extend")
      .option("strategy", "S", "planning strategy (manual when --modules is given without --strategy)", "greedy", 0,
              {"manual", "greedy", "cost", "exact"})
      .option("modules", "A,B,...", "manual: units to keep unsharded; other strategies: restrict the candidates")
      .option("output", "plan.json", "write the plan file (JSON with the FSDP2 Python that applies it)", "", 'o')
      .option("format", "FMT", "output format", "text", 0, {"text", "json"})
      .flag("fit", "fit the cluster model to the profile's collectives (the default without --cluster, or with a\ncluster file that has no collective costs)")
      .flag("no-fit", "use the cluster (built-in or --cluster) as it is, not fitted to the profile's collectives")
      .flag("as-profiled", kAsProfiledHelp)
      .flag("checkpoint", "plan activation checkpointing (full, per unit) jointly with unsharding, under the same budget\n"
                          "(cost: one queue of moves ranked by time saved per byte; exact: every combination)")
      .flag("offload-if-needed", "when no plan fits, try optimizer-state offload, then CPU offload (FSDP2 CPUOffloadPolicy)")
      .flag("buckets", "then choose all-gather buckets: merge units gathered one after the other in forward order into\n"
                       "one all-gather (FSDP2 fully_shard([m1, m2])) while each merge shortens the simulated step by\n"
                       "0.1 % or more and the plan fits the budget; the plan's own buckets and caps are the start;\n"
                       "alone (no --budget, --modules or --strategy): buckets only, no budget")
      .option("evidence", "KIND",
              "critical-path: only units whose all-gathers are on the profile's measured critical path are\n"
              "candidates (shardscope analyze critical-path IN); needs a profile IN", "", 0, {"critical-path"});
  add_plan_knob_options(p);
  add_search_options(p);
  if (!p.parse(args)) return kExitOk;
  sim::SimInputRequest req = sim_input_request(p);
  // As `simulate`: a profile's own collectives calibrate the cluster unless told otherwise, so
  // that `plan IN` and `simulate IN --plan` predict the same numbers.
  const bool no_fit = p.flag_set("no-fit");
  if (no_fit && req.fit) throw UsageError("--fit and --no-fit exclude each other");
  req.fit_if_available = !no_fit && !req.fit;
  if (p.flag_set("search")) {
    if (p.flag_set("buckets")) throw UsageError("--buckets plans one configuration's buckets: not with --search");
    return run_plan_search(p, req);
  }
  for (const char* o : {"global-batch", "max-tp", "top", "threads", "plan-top"})
    if (p.has(o)) throw UsageError(std::string("--") + o + " is an option of --search");
  if (p.flag_set("json")) throw UsageError("--json is an option of --search (use --format json)");

  sim::PlanRequest pr;
  // --buckets alone (no budget, no units named): buckets only, no unit kept unsharded.
  const bool buckets_only = p.flag_set("buckets") && !p.has("budget") && !p.has("modules") && !p.has("strategy");
  const std::string strategy = p.has("strategy") ? p.get("strategy") : p.has("modules") || buckets_only ? "manual" : "greedy";
  pr.strategy = strategy == "manual" ? sim::Strategy::Manual
                : strategy == "cost" ? sim::Strategy::Cost
                : strategy == "exact" ? sim::Strategy::Exact
                                      : sim::Strategy::Greedy;
  if (p.has("modules")) pr.modules = split_commas(p.get("modules"));
  pr.checkpoint = p.flag_set("checkpoint");
  pr.offload_if_needed = p.flag_set("offload-if-needed");
  if (pr.checkpoint && (pr.strategy == sim::Strategy::Greedy || pr.strategy == sim::Strategy::Manual))
    throw UsageError("--checkpoint needs --strategy cost or exact");
  if (pr.strategy == sim::Strategy::Manual && pr.modules.empty() && !buckets_only)
    throw UsageError("manual planning needs --modules A,B,... (or --buckets alone: buckets only)");
  if (!p.has("budget")) {
    if (pr.strategy != sim::Strategy::Manual) throw UsageError("missing --budget (e.g. --budget 70GiB)");
    pr.budget_bytes = std::numeric_limits<std::int64_t>::max();
  } else {
    auto b = parse_bytes(p.get("budget"));
    if (!b || *b <= 0) throw UsageError("--budget: '" + p.get("budget") + "' is not a size (e.g. 70GiB, 512MiB, 8e10)");
    pr.budget_bytes = *b;
  }

  // Measured evidence: keep unsharded only what the recorded step really waited for.
  std::vector<UnitEvidence> evidence;
  if (p.has("evidence")) {
    if (p.positionals("IN").empty()) throw UsageError("--evidence critical-path needs a profile IN, not --model");
    if (pr.strategy == sim::Strategy::Manual) throw UsageError("--evidence restricts a planner's candidates: not with manual planning");
    evidence = critical_path_evidence(p.positionals("IN").front());
    std::vector<std::string> on_path;
    for (const auto& e : evidence)
      if (pr.modules.empty() || std::find(pr.modules.begin(), pr.modules.end(), e.unit) != pr.modules.end())
        on_path.push_back(e.unit);
    if (on_path.empty()) {
      std::cout << "No FSDP unit's all-gather is on the measured critical path of " << p.positionals("IN").front()
                << ": keeping units unsharded would not shorten the measured step. Nothing planned.\n";
      return kExitOk;
    }
    pr.modules = on_path;
  }

  sim::SimInputs in = sim::load_sim_inputs(req);
  apply_plan_knobs(p, in.plan);
  sim::CompiledStep base = sim::compile_step(in.model, in.plan, in.cluster);
  sim::PlanOutcome o = sim::plan_unshard(in.model, base, in.cluster, pr);
  sim::FsdpPlan plan = in.plan;
  for (const auto& n : o.unsharded)
    if (std::find(plan.unsharded.begin(), plan.unsharded.end(), n) == plan.unsharded.end()) plan.unsharded.push_back(n);
  for (const auto& n : o.checkpointed) plan.checkpoint[n] = "full";
  if (o.offload != base.offload) plan.offload = o.offload == sim::Offload::Cpu ? "cpu" : "optimizer";
  // A parallel layout only means something at its world size: the plan file carries it.
  if (!plan.parallel.is_1d() && plan.world_size == 0) plan.world_size = base.world;
  std::optional<sim::BucketOutcome> bucketed;
  if (p.flag_set("buckets")) {
    bucketed = sim::plan_buckets(in.model, plan, in.cluster, pr.budget_bytes);
    plan = sim::with_buckets(plan, bucketed->buckets);
    o.result = sim::simulate(sim::compile_step(in.model, plan, in.cluster), true);
    o.fits = o.result.peak_bytes <= pr.budget_bytes;
    o.simulations += bucketed->simulations;
  }
  sim::CompiledStep chosen = sim::compile_step(in.model, plan, in.cluster);
  // A bucket's all-gather is a size the profile may never have run: its time is the fit's
  // extrapolation, which over a narrow span of sizes cannot tell latency from bandwidth (CPU gloo:
  // the latency a merge saves fitted 0 to 8 ms across recordings of one job).
  std::string extrapolated;
  if (bucketed && !plan.buckets.empty() && in.fitted) {
    const int ag = static_cast<int>(sim::Coll::AllGather);
    std::int64_t largest = 0;
    for (const auto& e : chosen.units)
      if (e.members.size() > 1) largest = std::max(largest, e.ag_bytes);
    const auto latency = [&](sim::Coll c) { return format_duration_ns(std::llround(in.fit.alpha_us[static_cast<int>(c)] * 1000.0)); };
    if (in.fit.max_bytes[ag] > 0 && largest > in.fit.max_bytes[ag] * 5 / 4) {
      extrapolated = "a bucket gathers " + format_bytes(largest) + ", beyond the profile's all-gathers (" +
                     format_bytes(in.fit.min_bytes[ag]) + " to " + format_bytes(in.fit.max_bytes[ag]) +
                     "): its time is the fitted model's extrapolation (per-collective latency: all-gather " +
                     latency(sim::Coll::AllGather) + ", reduce-scatter " + latency(sim::Coll::ReduceScatter) + ")";
      if (in.fit.max_bytes[ag] < 2 * in.fit.min_bytes[ag]) extrapolated += ", fitted over sizes too close to tell latency from bandwidth";
    }
  }
  // A merge saves a unit's hooks and calls too, which only a measured per-unit cost models
  // (CPU gloo, 8 narrow layers bucketed two by two: -9 to -21 % measured, -0.0 % predicted without it).
  std::string unit_cost;
  if (bucketed && in.cluster.fsdp_unit_forward_us <= 0 && in.cluster.fsdp_unit_backward_us <= 0)
    unit_cost = "the cluster has no measured FSDP per-unit cost, so a merge saves only collective latency here; measure it on the "
                "training machine (torchrun --nproc_per_node=N -m shardscope.measure_fsdp_units -o units.json) and pass --cluster units.json";
  // FSDP2 has no caps, and a unit the job shards as a group is recorded as its first module: the
  // plan file carries the buckets as modules, for apply_plan.
  plan.fsdp2_buckets = sim::formed_buckets(in.model, chosen, plan);
  // Whether the replay of the profile issues the job's collectives: a plan of a loop the replay
  // does not model (a GAN) is not to be trusted, and is said not to be.
  sim::CollectiveCheck replay_collectives;
  if (in.from_profile) {
    sim::ClusterModel c = in.cluster;
    if (in.profile_world > 0) c.world_size = in.profile_world;
    replay_collectives = sim::check_replay(in, sim::simulate(sim::compile_step(in.model, in.recorded_plan, c)), in.fitted).collectives;
  }

  if (!p.get("output").empty()) sim::write_file_atomically(p.get("output"), sim::plan_file_json(plan, o, strategy, pr.budget_bytes, in.model.second_model_roots()));
  if (p.get("format") == "json") {
    JsonWriter j(std::cout);
    j.begin_object().kv("source", in.source).kv("strategy", strategy).kv("budget_bytes", pr.budget_bytes);
    j.key("unsharded").begin_array();
    for (const auto& n : plan.unsharded) j.value(n);
    j.end_array();
    if (!plan.checkpoint.empty()) {
      j.key("activation_checkpointing").begin_object();
      for (const auto& [n, v] : plan.checkpoint) j.kv(n, v);
      j.end_object();
    }
    if (plan.offload != "none") j.kv("offload", plan.offload);
    if (bucketed) {
      j.key("buckets").begin_array();
      for (const auto& b : plan.buckets) {
        j.begin_array();
        for (const auto& n : b) j.value(n);
        j.end_array();
      }
      j.end_array();
      j.kv("buckets_saved_ms", sim::to_ms(bucketed->before.step_ns - bucketed->after.step_ns));
      if (!extrapolated.empty()) j.kv("buckets_extrapolated", extrapolated);
      if (!unit_cost.empty()) j.kv("buckets_unit_cost", unit_cost);
    }
    j.kv("fits_budget", o.fits).kv("simulations", o.simulations);
    if (!evidence.empty()) {
      j.key("critical_path_evidence").begin_array();
      for (const auto& e : evidence)
        j.begin_object().kv("unit", e.unit).kv("all_gather_on_path_ns", e.on_path_ns).kv("all_gather_ns", e.all_gather_ns).end_object();
      j.end_array();
    }
    sim::write_result_fields(j, chosen, o.result, false);
    j.key("baseline").begin_object().kv("step_time_ms", sim::to_ms(o.baseline.step_ns)).kv("peak_memory_bytes", o.baseline.peak_bytes).end_object();
    sim::write_calibration_fields(j, in);
    sim::write_collective_check(j, replay_collectives);
    j.kv("fsdp2_python", sim::plan_to_python(plan, in.model.second_model_roots()));
    j.kv("torchtitan", sim::plan_to_torchtitan(plan, p.get("output"), every_unit_unsharded(chosen)));
    if (!p.get("output").empty()) j.kv("output", p.get("output"));
    j.end_object();
    std::cout << "\n";
  } else {
    std::cout << "Input        " << in.source << "\nStrategy     " << (buckets_only ? "buckets only" : strategy) << ", budget "
              << (p.has("budget") ? format_bytes(pr.budget_bytes) : std::string("none")) << " per rank, " << o.simulations
              << " simulations\n";
    if (!evidence.empty()) {
      std::cout << "Evidence     all-gather time on the measured critical path:";
      for (const auto& e : evidence) std::cout << " " << e.unit << " " << format_duration_ns(e.on_path_ns);
      std::cout << "\n";
    }
    std::cout << "Baseline     " << sim::to_ms(o.baseline.step_ns) << " ms, peak " << format_bytes(o.baseline.peak_bytes) << "\n";
    sim::print_calibration_text(std::cout, in);
    std::cout << "Unsharded    " << plan.unsharded.size() << " module(s):";
    for (const auto& n : plan.unsharded) std::cout << " " << (n.empty() ? "(root)" : n);
    std::cout << "\n";
    if (!plan.checkpoint.empty()) {
      std::cout << "Checkpoint   ";
      for (const auto& [n, v] : plan.checkpoint) std::cout << " " << (n == "*" ? "(all)" : n) << "=" << v;
      std::cout << "\n";
    }
    if (bucketed) {
      std::cout << "Buckets      " << plan.buckets.size() << " of two or more units";
      for (const auto& b : plan.buckets) {
        std::cout << (&b == &plan.buckets.front() ? ": " : "; ");
        for (const auto& n : b) std::cout << (&n == &b.front() ? "" : "+") << n;
      }
      std::cout << " (" << sim::to_ms(bucketed->before.step_ns) << " -> " << sim::to_ms(bucketed->after.step_ns)
                << " ms; merges that save less than " << sim::kMinBucketGain * 100 << " % of the step are not made)\n";
      if (!extrapolated.empty()) std::cout << "NOTE: " << extrapolated << "\n";
      if (!unit_cost.empty()) std::cout << "NOTE: " << unit_cost << "\n";
    }
    if (plan.offload != "none") std::cout << "Offload      " << plan.offload << (o.offload != base.offload ? " (chosen: nothing else fits)" : "") << "\n";
    std::cout << (o.fits ? "" : "WARNING: the plan does not fit the budget\n");
    if (!replay_collectives.match) std::cout << "WARNING: " << replay_collectives.warning << "\n";
    sim::print_result_text(std::cout, chosen, o.result, false, is_cpu_device(in.cluster.device));
    if (!p.get("output").empty()) std::cout << "Wrote        " << p.get("output") << "\n";
    const std::string file = p.get("output").empty() ? "plan.json" : p.get("output");
    if (!plan.buckets.empty() || !plan.bucket_cap_mb.empty())  // new groups (the job's own stay as they are)
      std::cout << "Apply        shardscope.plan.apply_plan(model, \"" << file << "\") before the model is sharded (FSDP2 groups a\n"
                << "             bucket's modules when it shards them: fully_shard([m1, m2])); FSDP1 and torchtitan's hook\n"
                << "             (which change a sharded model) take the unshard set only:\n";
    else
      std::cout << "Apply        shardscope.plan.apply_plan(model, \"" << file << "\") before or after the model is sharded;\n";
    std::cout << "             FSDP1: FSDP(model, auto_wrap_policy=shardscope.plan.fsdp1_wrap_policy(model, \"" << file
              << "\", {Block}))\n";
    // Two FSDP models in the recorded process (a teacher beside its student): record names the
    // second one by its class and its units under it ("FSDPNet", "FSDPNet.layers.0"), a top-level
    // unit named as its class; apply_plan and fsdp1_wrap_policy take one model's units with root=.
    std::vector<std::string> roots;
    for (const auto& u : in.model.units)
      if (u.is_root || u.is_second_model_root())
        roots.push_back("\"" + u.name + "\"" + (u.frozen ? " (frozen)" : ""));
    if (roots.size() > 1) {
      std::cout << "             the profile holds " << roots.size() << " models:";
      for (const auto& r : roots) std::cout << " " << r;
      std::cout << "; apply each model's units with apply_plan(model, \"" << file << "\", root=<its name>)\n"
                << "             (FSDP1: fsdp1_wrap_policy(model, \"" << file << "\", {Block}, root=<its name>))\n";
    }
    std::cout << "             In torchtitan:\n";
    std::istringstream tt(sim::plan_to_torchtitan(plan, p.get("output"), every_unit_unsharded(chosen)));
    for (std::string line; std::getline(tt, line);) std::cout << "  " << line << "\n";
  }
  return o.fits ? kExitOk : kExitBadInput;
}

}  // namespace ss::cli
