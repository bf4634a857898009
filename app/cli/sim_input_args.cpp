#include "app/cli/sim_input_args.h"

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
              "step on the CPU); optimizer = optimizer states only (grads down, CPU update, params up)",
              "", 0, {"none", "cpu", "optimizer"})
      .option("offload-prefetch", "K", "with --offload cpu: copy host-resident shards up to K units ahead (OOGC multi-layer prefetch)")
      .flag("pipelined-optimizer", "offload: the CPU updates each unit as soon as its gradients are down, overlapping the rest of backward (OOGC)");
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
  return any;
}

}  // namespace ss::cli
