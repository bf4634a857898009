// A what-if plan: which units stay unsharded after forward, prefetch lists, buckets, gradient
// accumulation, ZeRO stage, HSDP. Read from and written to JSON (docs/simulator.md); the written
// form also carries the FSDP2 Python that applies it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ss::sim {

// Parallelism around FSDP (docs/simulator.md §parallelism): the world is pp x dp x cp x tp, tp
// innermost (inside a node when it fits), FSDP shards over dp x cp (torchtitan's dp_shard_cp mesh).
// Micro-batches per step are FsdpPlan::gradient_accumulation (the pipeline's micro-batch count).
struct Parallelism {
  int tp = 1;                      // Megatron tensor parallel degree
  bool sequence_parallel = false;  // TP's all-reduces become all-gather + reduce-scatter pairs
  bool loss_parallel = true;       // vocab-sharded logits (torchtitan); false: the head gathers them
  int cp = 1;                      // context parallel degree
  std::string cp_kind = "ulysses"; // "ulysses" (all-to-all) or "ring" (K/V passed around a ring)
  int pp = 1;                      // pipeline stages
  std::string pp_schedule = "1f1b";  // "1f1b", "gpipe" or "interleaved"
  int pp_virtual = 1;              // model chunks per stage (interleaved 1F1B)
  // Optional: the first unit of stages 1..pp-1, by index in forward order (the root is 0) or by
  // name (a plan file's strings: "layers.8"); one of the two.
  std::vector<int> pp_split;
  std::vector<std::string> pp_split_units;
  int ep = 1;                      // expert parallel degree (MoE expert units)
  // FSDP inside a pipeline stage. false (torch.distributed.pipelining with FSDP2, as torchtitan
  // runs it): units gathered for a backward stay unsharded until the last micro-batch's backward,
  // and gradients are reduce-scattered only then. true: every micro-batch reshards after its
  // backward and reduces its gradients (FSDP2's defaults outside a pipeline schedule).
  bool pp_fsdp_every_microbatch = false;

  bool operator==(const Parallelism&) const = default;
  bool is_1d() const { return tp == 1 && cp == 1 && pp == 1 && ep == 1; }
};

struct FsdpPlan {
  std::vector<std::string> unsharded;          // reshard_after_forward=False
  std::map<std::string, int> reshard_degree;   // reshard_after_forward=k (hpZ); k >= 2
  std::vector<std::string> resharded;          // force reshard_after_forward=True (e.g. the root)
  std::map<std::string, std::vector<std::string>> forward_prefetch;   // set_modules_to_forward_prefetch
  std::map<std::string, std::vector<std::string>> backward_prefetch;  // set_modules_to_backward_prefetch
  std::vector<std::vector<std::string>> buckets;  // fully_shard([m1, m2]): one all-gather for the list
  std::map<std::string, double> bucket_cap_mb;    // {"default": 2000, "2": 1000}: auto-bucketing by bucket index
  // The buckets of two or more modules that the plan formed (its lists, its caps, and the groups the
  // profiled job shards as one unit, recorded as their first module) on the model it was made for,
  // written by `plan -o` and the GUI's export: what shardscope.plan.apply_plan and the generated
  // Python apply (fully_shard([m1, m2])), since FSDP2 has no caps and Python does not know the
  // forward order. compile_step forms its own from `buckets` and the caps.
  std::vector<std::vector<std::string>> fsdp2_buckets;
  int zero_stage = 3;               // 2: every unit keeps its parameters from forward to backward
  int gradient_accumulation = 1;    // micro-batches per optimizer step
  bool sync_every_microbatch = true;  // false: reduce-scatter only on the last micro-batch
  // false: parameters stay unsharded from a micro-batch's backward to the next one's forward,
  // which then gathers nothing (FSDP2's set_reshard_after_backward(False) on all but the last).
  bool reshard_after_backward = true;
  int hsdp_replicate = 1;           // replicate degree; shard group = world / replicate
  bool separate_reduce_scatter_group = false;
  int world_size = 0;               // 0: take the cluster's
  // Activation checkpointing per unit: "full" (the whole unit) or a sub-module name (selective,
  // e.g. "attention": that sub-module of the unit is checkpointed). Key "*": every non-root unit
  // not named otherwise. Absent or "none": not checkpointed.
  std::map<std::string, std::string> checkpoint;
  // Offload: "none"; "cpu" = FSDP2's CPUOffloadPolicy (sharded parameters, gradients and optimizer
  // states on the host, optimizer step on the CPU); "optimizer" = optimizer states only (ZeRO-Offload
  // style: gradients go down, the CPU updates, parameters come back).
  std::string offload = "none";
  int offload_prefetch_depth = 1;    // host-resident shards copied up to k units ahead (OOGC); 1 = FSDP2
  bool pipelined_optimizer = false;  // CPU update of unit i overlaps the backward of the next units (OOGC)
  Parallelism parallel;

  bool operator==(const FsdpPlan&) const = default;
};

// Parses a plan; throws ProfileError (kind MalformedTable) naming the file and the field.
FsdpPlan parse_plan_json(const std::string& json, const std::string& where);

// The values a plan may take, as the plan file parser and the what-if panel's setters check them.
inline constexpr int kMaxParallelDegree = 1'000'000;
inline constexpr int kMaxMicroBatches = 4096;
inline constexpr int kMaxOffloadPrefetchDepth = 1024;
inline bool valid_offload(std::string_view v) { return v == "none" || v == "optimizer" || v == "cpu"; }
inline bool valid_cp_kind(std::string_view v) { return v == "ulysses" || v == "ring"; }
inline bool valid_pp_schedule(std::string_view v) { return v == "1f1b" || v == "gpipe" || v == "interleaved"; }
FsdpPlan load_plan_file(const std::string& path);
// Whether the plan file (one load_plan_file read) names `key` at its top level: a knob it leaves
// out keeps a replay's recorded value (hsdp_replicate).
bool plan_file_sets(const std::string& path, const char* key);
// The plan as a JSON object (no trailing newline).
std::string plan_to_json(const FsdpPlan& plan);
// True when a checkpoint value means selective (a sub-module name rather than "full" / "none").
inline bool is_selective_checkpoint(const std::string& v) { return v != "full" && v != "none"; }

// FSDP2 Python that applies the plan's per-module choices to `model`. `second_models`: the
// profile's second FSDP models (SimModel::second_model_roots); with any, the function takes root=.
std::string plan_to_python(const FsdpPlan& plan, const std::vector<std::string>& second_models = {});

// The plan in torchtitan's terms (no edit of torchtitan): the config-registry hook that applies
// the plan file around its parallelize step, and torchtitan's own options where they say the same
// (`every_unit_unsharded`: the plan keeps every non-root unit unsharded, i.e.
// --parallelism.fsdp_reshard_after_forward never). Lines of text, each ending in a newline.
std::string plan_to_torchtitan(const FsdpPlan& plan, const std::string& plan_file, bool every_unit_unsharded);

}  // namespace ss::sim
