#include "app/cli/sim_input_args.h"

#include <algorithm>
#include <cstdlib>

namespace ss::cli {

sim::SimInputRequest sim_input_request(const ArgParser& p) {
  sim::SimInputRequest req;
  const auto& pos = p.positionals("IN");
  if (!pos.empty()) req.profile_path = pos.front();
  req.model_path = p.get("model");
  if (req.profile_path.empty() == req.model_path.empty()) throw UsageError("give either a profile IN or --model M.json");
  req.cluster_path = p.get("cluster");
  req.plan_path = p.get("plan");
  req.fit = p.flag_set("fit");
  req.calibrate_to_unobserved = !p.flag_set("as-profiled");
  const long long world = p.get_int("world");
  if (world < 0 || world > 10'000'000) throw UsageError("--world must be between 1 and 10000000");
  req.world_override = static_cast<int>(world);
  return req;
}

void add_plan_knob_options(ArgParser& p) {
  p.option("checkpoint-all", "MODE",
           "activation checkpointing of every non-root unit: none, full, or a sub-module name / glob for selective\n"
           "(e.g. attention); per-unit choices go in the plan file's activation_checkpointing")
      .option("offload", "MODE",
              "none; cpu = FSDP2 CPUOffloadPolicy (sharded params, grads and optimizer states on the host, optimizer\n"
              "step on the CPU); optimizer = optimizer states only (grads down, CPU update, params up); the host's\n"
              "optimizer rate and copy bandwidth come from --cluster (measure them: python -m shardscope.measure_host)",
              "", 0, {"none", "cpu", "optimizer"})
      .option("offload-prefetch", "K", "with --offload cpu: copy host-resident shards up to K units ahead (OOGC multi-layer prefetch)")
      .flag("pipelined-optimizer", "offload: the CPU updates each unit as soon as its gradients are down, overlapping the rest of backward (OOGC)")
      .option("parallel", "SPEC",
              "parallelism around FSDP, e.g. tp=8,sp,pp=4,cp=2,ring,ep=8,v=2,interleaved (a model description is needed for\n"
              "tp/cp/ep); micro-batches are --micro-batches / the plan's gradient_accumulation")
      .option("micro-batches", "N", "micro-batches per optimizer step (gradient accumulation; the pipeline's micro-batches)");
}

namespace {

int degree(const std::string& key, const std::string& v) {
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < 1 || n > 1'000'000) throw UsageError("--parallel: " + key + " needs a degree >= 1, not '" + v + "'");
  return static_cast<int>(n);
}

}  // namespace

void parse_parallel_spec(const std::string& spec, sim::Parallelism& par) {
  std::size_t at = 0;
  while (at <= spec.size()) {
    const std::size_t comma = std::min(spec.find(',', at), spec.size());
    const std::string item = spec.substr(at, comma - at);
    at = comma + 1;
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    const std::string k = item.substr(0, eq), v = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (k == "tp") par.tp = degree(k, v);
    else if (k == "cp") par.cp = degree(k, v);
    else if (k == "pp") par.pp = degree(k, v);
    else if (k == "ep") par.ep = degree(k, v);
    else if (k == "v" || k == "pp_virtual") par.pp_virtual = degree(k, v), par.pp_schedule = par.pp_virtual > 1 ? "interleaved" : par.pp_schedule;
    else if (k == "sp") par.sequence_parallel = true;
    else if (k == "no_loss_parallel") par.loss_parallel = false;
    else if (k == "ring" || k == "ulysses") par.cp_kind = k;
    else if (k == "1f1b" || k == "gpipe" || k == "interleaved") par.pp_schedule = k;
    else throw UsageError("--parallel: unknown item '" + item + "' (tp=N, sp, no_loss_parallel, cp=N, ring, ulysses, pp=N, 1f1b, gpipe, interleaved, v=N, ep=N)");
  }
}

bool apply_plan_knobs(const ArgParser& p, sim::FsdpPlan& plan) {
  bool any = false;
  if (p.has("checkpoint-all")) {
    const std::string v = p.get("checkpoint-all");
    if (v.empty()) throw UsageError("--checkpoint-all needs none, full or a sub-module name");
    if (v == "none") plan.checkpoint.erase("*");
    else plan.checkpoint["*"] = v;
    any = true;
  }
  if (p.has("offload")) plan.offload = p.get("offload"), any = true;
  if (p.has("offload-prefetch")) {
    const long long k = p.get_int("offload-prefetch");
    if (k < 1 || k > 1024) throw UsageError("--offload-prefetch must be between 1 and 1024");
    plan.offload_prefetch_depth = static_cast<int>(k);
    any = true;
  }
  if (p.flag_set("pipelined-optimizer")) plan.pipelined_optimizer = true, any = true;
  if (p.has("parallel")) parse_parallel_spec(p.get("parallel"), plan.parallel), any = true;
  if (p.has("micro-batches")) {
    const long long n = p.get_int("micro-batches");
    if (n < 1 || n > 4096) throw UsageError("--micro-batches must be between 1 and 4096");
    plan.gradient_accumulation = static_cast<int>(n);
    any = true;
  }
  return any;
}

}  // namespace ss::cli
