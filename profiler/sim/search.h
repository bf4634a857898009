// The what-if search (issue 15 item 5; docs/simulator.md §search): every (dp, tp, pp, cp) mesh of
// the world x activation checkpointing x offload x micro-batch count, simulated under a per-rank
// memory budget and ranked by throughput; the best few then get the cost planner's unshard set.
// Speed: docs/benchmarks.md "What-if search speed".
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "profiler/sim/model_description.h"
#include "profiler/sim/step_simulator.h"

namespace ss::sim {

// What tensor, context and expert parallelism need to know of the model's shape. A profile has
// none (known = false): the search then keeps tp = cp = ep = 1.
struct SearchShape {
  bool known = false;
  int heads = 0, kv_heads = 0, layers = 0;
  std::int64_t seq_len = 0;
  int micro_batch = 1;   // sequences per micro-batch (the description's; a profile's is "1 recorded micro-batch")
  int num_experts = 0;   // MoE: expert parallelism's degree divides it
  double flops_per_sequence = 0;  // model FLOPs of forward + backward of one sequence (MFU); 0: unknown
  double peak_flops_per_gpu = 0;  // dense BF16 peak, FLOP/s
};
// From a description and the SimModel built from it (for the model FLOPs behind MFU), on `device`
// (a cluster's device; empty: the description's).
SearchShape search_shape(const ModelDescription& d, const SimModel& m, const std::string& device = "");

struct SearchRequest {
  std::int64_t budget_bytes = 0;
  // Sequences per optimizer step. > 0: fixed, so micro_batches = global_batch / (dp x micro_batch)
  // (a mesh where that is not a whole number is skipped). 0: the micro-batch count is free
  // ({1, pp, 2pp, 4pp} with a pipeline, 1 without) and configurations process different batches;
  // the ranking is by throughput either way (with a global batch, that is the step time's order).
  int global_batch = 0;
  int top = 10;
  // At most this many configurations, in rank order, get the cost planner's unshard set (of those
  // that could still make the list with one); -1: all of them. SearchResult::unplanned_contenders
  // says how many further down a cap left out.
  int unshard_top_k = -1;
  int max_tp = 0;          // 0: the cluster's GPUs per node (TP stays inside a node)
  int max_cp = 32;
  int max_pp = 0;          // 0: as many stages as the model has places to split
  bool selective = true;   // also try selective checkpointing of "attention" where the model has it
  bool offload = true;     // also try optimizer-state and CPU offload (pipeline-free meshes only)
  int threads = 1;
  // Skip what the lower bounds say cannot make the list (false: simulate and plan it anyway; the
  // list is the same, which the tests check).
  bool prune = true;
  // Called from the searching threads (serialised) about every `progress_every` configurations.
  std::function<void(int done, int total, int simulations)> progress;
  int progress_every = 256;
};

struct SearchConfig {
  FsdpPlan plan;          // the whole plan: parallelism, gradient_accumulation, checkpoint, offload, unsharded
  int dp = 1;
  std::string checkpoint = "none";  // of every non-root unit: "none", "full" or the selective pattern
  int unsharded = 0;      // units the cost planner keeps unsharded
  SimResult result;       // of the plan (ops and memory dropped; stages kept)
  std::int64_t sequences = 0;  // per optimizer step: dp x micro_batches x micro_batch
  double tokens_per_s = 0;     // 0 when the sequence length is unknown (profiles)
  double sequences_per_s = 0;
  double mfu = 0;              // 0 when unknown
  double lower_bound_ns = 0;   // step_lower_bound_ns of the plan (no unshard set lowers it)
};

struct SearchResult {
  std::vector<SearchConfig> configs;  // the top configurations, best first; empty when nothing fits
  std::string reason;                 // why nothing fits (empty when something does)
  std::vector<std::string> notes;     // dimensions not searched and why
  // Counts: configurations enumerated (mesh x micro-batches x checkpointing x offload), skipped as
  // invalid (degrees the model or the world do not allow), pruned by static memory alone (sharded
  // parameters + gradients + optimizer states over the budget), skipped because its step-time lower
  // bound per sequence is over the `top`-th best simulated time (it cannot enter the list), skipped
  // because the same mesh and micro-batches with less checkpointing or less offload already fits
  // (checkpointing never shortens the step; offload is taken only when needed, as the planner's
  // --offload-if-needed does), simulated, and fitting the budget; then the planner's runs.
  int enumerated = 0, invalid = 0, pruned_static = 0, pruned_bound = 0, dominated = 0, simulated = 0, fitting = 0;
  int planned = 0, planner_simulations = 0;  // configurations given the planner, its simulations
  int unplanned_contenders = 0;  // past unshard_top_k, not planned, whose bound is under the listed top-th time
  double seconds = 0;          // wall time, all of it
  double planner_seconds = 0;  // of which the unshard planning of the best few
};

// `model` must not carry checkpointing of its own (a description built with activation_checkpointing
// "none"), so that the plan's checkpointing is what is searched. `base` supplies the knobs the search
// does not choose (buckets, prefetch, ZeRO stage, HSDP, bucket caps); its parallelism, micro-batches,
// checkpointing, offload and unsharded list are replaced. Throws ProfileError for a world below 1.
SearchResult search_configs(const SimModel& model, const SearchShape& shape, const FsdpPlan& base, const ClusterModel& cluster,
                            const SearchRequest& req);

// A lower bound of a configuration's per-rank peak: sharded parameters, gradients and optimizer
// states (what offload leaves on the device) of the largest share one rank stage holds, plus the
// model's constant memory. Every simulated peak is at least this (the optimizer step holds it all).
std::int64_t static_memory_bytes(const CompiledStep& step);

// A lower bound of a configuration's simulated step time: the work the compute stream does in
// series whatever overlaps (compute, recompute, model-parallel collectives, which block it, ring
// attention's excess, measured extras), times the micro-batches; with a pipeline, the busiest
// stage's share plus the first micro-batch's way there and its gradient's way back (the bubble).
// The search skips a configuration whose bound per sequence is over the best few's time.
TimeNs step_lower_bound_ns(const CompiledStep& step);

}  // namespace ss::sim
