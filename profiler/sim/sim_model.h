// The simulator's view of one training step: FSDP units (what is gathered and reduced together),
// compute segments in forward order (each owned by one unit) and the per-rank constants that set
// memory. Built from a measured profile (profile_extract.h) or from a model description
// (model_description.h); independent of world size, so one model serves any cluster.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "storage/types.h"

namespace ss::sim {

struct SimUnit {
  std::string name;   // fully-qualified module name; "" for the root model
  std::string group;  // parent module the greedy planner splits into this unit ("" = the unit itself)
  std::string class_name;
  std::int64_t param_count = 0;  // parameters owned by this unit (not by nested units)
  bool is_root = false;          // FSDP2: the root defaults to reshard_after_forward=False
  // reshard_after_forward as the profile recorded it (modules.reshard_policy): 1 = True (FSDP2's
  // default, also when unknown), 0 = False, k >= 2 = a 1/k slice. A replay reproduces it; a plan
  // changes it ("unsharded", "resharded", "reshard_after_forward").
  int recorded_reshard = 1;
  // Forward all-gathers of this unit per step beyond the one at its pre-forward, as measured: the
  // trainer gathers it again in forward (torchtitan's chunked loss unshards the output head
  // explicitly and sets its reshard policy itself; a grouped unit re-gathers for each member's
  // forward; SimpleFSDP gathers at every use). Replayed as measured, whatever the plan.
  int extra_fwd_gathers = 0;
  // Forward calls of the unit per pass beyond the first (the model called on two inputs before one
  // backward: a siamese loss, DPO's chosen and rejected; the trained model's no_grad forwards
  // before its training forward: RLHF's rollouts, PPO's old log-probabilities), from its module
  // ranges. FSDP2 gathers again at each while the unit reshards after forward and at none while
  // it is kept unsharded, so these follow the plan (extra_fwd_gathers do not).
  int repeat_fwd_calls = 0;
  // Backward all-gathers per pass beyond the modelled one (none for a unit kept unsharded): a unit
  // called twice is gone through by two backwards, and FSDP2's post-backward after the first
  // reshards it, so the second gathers it again whatever the forward policy. As measured; the
  // replay runs 1 + this many backward chains through the unit (step_simulator.cpp).
  int extra_bwd_gathers = 0;
  // The unit's reduction a pass made in several reduce-scatters, each this share of its bytes, in
  // order (empty: one). torchtitan's chunked loss reduces the output head's gradients apart from
  // the norm's, right before them (profile_extract.cpp). Replayed as measured on the unit alone;
  // a bucket of several units reduces in one.
  std::vector<double> reduce_split{};
  // A unit no backward goes through, of a model run under no_grad every step beside the trained
  // one (a distillation's teacher, RLHF's reference model), as a recording's ranges show it
  // (profile_extract.cpp): gathered in forward only, never reduced, no gradient or optimizer
  // state; kept unsharded after forward (its root, or a plan's "unsharded"), it stays so from step
  // to step (FSDP2 reshards at the post-backward it never reaches) and gathers no more.
  bool frozen = false;
  // A frozen unit of the trained model itself (its bottom frozen for fine-tuning: embeddings and
  // the first blocks, whose backward autograd skips): FSDP2's backward prefetch still gathers the
  // one below the lowest trained unit, for nothing, and the root's post-backward callback
  // reshards every unit of the model at the backward's end, kept unsharded or not, so none stays
  // unsharded from step to step (a user loop with inp and layers.0 frozen: 9 all-gathers a step,
  // replayed 8).
  bool frozen_in_trained_model = false;
  // Parameters that get a gradient (-1: all): LoRA trains an adapter beside frozen base weights
  // that the unit still gathers in forward and backward. Its reduce-scatter, gradients and
  // optimizer state are of these only (profile_extract.cpp: from the measured reduce-scatters).
  std::int64_t trainable_params = -1;
  double trainable_fraction() const {
    if (frozen) return 0.0;
    if (trainable_params < 0 || param_count <= 0) return 1.0;
    return std::min(1.0, double(trainable_params) / double(param_count));
  }
  // Host work of the unit's backward unshard (copy-in, copy-out, hooks) measured on a CPU run;
  // spent on the compute lane only when the unit is gathered in backward.
  TimeNs bwd_unshard_host_ns = 0;
  // Parallelism around FSDP (model descriptions only): parameters tensor parallelism does not
  // split (norm weights, replicated on every TP rank), and MoE experts, which expert parallelism
  // splits instead (each EP rank holds 1/ep of the experts; FSDP shards them over dp*cp/ep).
  std::int64_t tp_replicated_params = 0;
  bool expert = false;
  // The other modules of a unit the job shards as a group (fully_shard([norm, output]), recorded as
  // its first member, this unit): a plan that names the unit names them too for Python (shardscope
  // apply_plan shards the list in one call).
  std::vector<std::string> group_members{};
  // The root of a second model in the recorded process (a teacher beside its student): record names
  // it by its class ("FSDPNet", its units "FSDPNet.layers.0") under the first model's "".
  bool is_second_model_root() const {
    return !is_root && !name.empty() && name == class_name && name.find('.') == std::string::npos;
  }
  // The root's parameters only its last segment uses (norm + output head): with pipeline
  // parallelism the first stage holds the rest (embeddings), the last stage these. -1: unknown,
  // split in proportion to the head's and tail's forward time.
  std::int64_t tail_params = -1;
  // Parameters of this unit that FSDP2 shards on a mesh of their own (fully_shard's
  // shard_placement_fn; torchtitan's routed experts under expert parallelism: the expert-FSDP
  // mesh of dp_shard / ep ranks), as a recording's hooks saw them (profile_extract.cpp): their
  // count over all ranks and the degree `ep` that splits them. At an FSDP group of S ranks they
  // are gathered and reduced over S / ep ranks, not at all when that is 1. Included in param_count.
  struct ApartGroup {
    std::int64_t params = 0;
    int ep = 1;
    int recorded_mesh = 1;  // its mesh's size in the recording
  };
  std::vector<ApartGroup> apart_groups{};
};

// What a measured profile shows on the GPU besides compute and FSDP's own collectives, replayed
// as measured (trace-driven, like Lumos / Echo): collectives FSDP does not issue (sequence-parallel
// all-to-all, send/recv, a loss all-reduce ...) and GPU idle time (host-bound launch gaps). Both
// sit on the compute stream's critical path: the measured trace shows compute waiting for them.
struct MeasuredExtra {
  TimeNs other_comm_ns = 0;            // time those collectives run while no compute kernel does
  int other_comm_count = 0;            // collectives that start inside the stretch
  std::int64_t other_comm_bytes = 0;   // their total size; 0 when the profile has no sizes
  TimeNs idle_ns = 0;                  // the GPU waits for the host (gaps no FSDP collective explains)
};

// A named sub-module of a segment (e.g. "attention", "feed_forward"): what selective activation
// checkpointing of that sub-module recomputes and no longer saves. Model descriptions fill it;
// profiles leave it empty (selective checkpointing of a profile's unit is then refused).
struct SimPart {
  std::string name;              // sub-module name relative to the unit ("attention", "feed_forward")
  TimeNs fwd_ns = 0;             // its share of the segment's forward compute
  std::int64_t saved_bytes = 0;  // its share of the segment's saved activations
};

// One stretch of compute on the compute stream. A unit has one segment, except the root, which
// usually has a head (embedding, before the first layer) and a tail (norm, output, loss).
// What tensor, context and expert parallelism do to a segment (model descriptions fill it; sizes
// are for the whole micro-batch at tp = cp = 1 and are divided by the degrees when compiled).
struct ParallelShape {
  int tp_pairs = 0;                // column -> row parallel pairs: one TP all-reduce each per pass
  // The root's vocab-parallel embedding (forward all-reduce only) and column-parallel output head
  // with loss parallelism (backward all-reduce of its input gradient only), as torchtitan does.
  // With SP they become a reduce-scatter (embedding, forward) / all-gather (its backward) and an
  // all-gather (head input, forward) / reduce-scatter (backward).
  int tp_fwd_only = 0, tp_bwd_only = 0;
  // SP only: replicated norm weights see sequence shards, so their gradients are all-reduced over
  // the TP group in backward (one per norm, norm_grad_bytes each).
  int sp_norms = 0;
  std::int64_t norm_grad_bytes = 0;
  // The output head (tp > 1): with loss parallelism three all-reduces of loss_stat_bytes (the
  // softmax max, the sum of exponentials, the target logit: fp32 per token) in forward; without,
  // one all-gather of the logits (logits_bytes) in forward.
  std::int64_t logits_bytes = 0, loss_stat_bytes = 0;
  std::int64_t tp_bytes = 0;       // one TP collective's buffer: tokens x hidden x activation dtype
  std::int64_t tp_replicated_saved = 0;  // saved activations TP without SP keeps whole (norm inputs)
  int attentions = 0;              // self-attention layers (context parallelism acts on them)
  std::int64_t cp_qkv_bytes = 0;   // Ulysses: q, k, v of the whole sequence and all heads
  std::int64_t cp_out_bytes = 0;   // Ulysses: the attention output
  std::int64_t cp_kv_bytes = 0;    // ring: k and v of the whole sequence
  TimeNs attention_core_ns = 0;    // forward score/softmax/value work (ring hides its p2p behind it)
  int moe_layers = 0;              // expert layers: dispatch + combine all-to-all each per pass
  std::int64_t ep_bytes = 0;       // one dispatch buffer: routed tokens x hidden x activation dtype
};

struct SimSegment {
  int unit = 0;
  TimeNs fwd_ns = 0;
  TimeNs bwd_ns = 0;  // includes recomputation when activation checkpointing is on
  std::int64_t saved_activation_bytes = 0;      // held from forward until this segment's backward
  std::int64_t recompute_activation_bytes = 0;  // transient during backward (activation checkpointing)
  // Transient while this segment computes (its ops' temporaries, e.g. a loss's softmax), measured
  // from a profile's temporary allocations; 0 for model descriptions.
  // For a profile's unit other than the root, bwd_temp_bytes is what its backward holds at its
  // highest beyond its start (profile_backward_net.cpp).
  std::int64_t fwd_temp_bytes = 0, bwd_temp_bytes = 0;
  // What the backward was handed when it began: the gradient of the segment's output, made by the
  // backward of the segment after it and alive until this one has used it. Measured on a profile
  // (temporaries alive when the unit's backward starts); 0 for model descriptions. Without
  // checkpointing it stands where the output itself stood, which the next segment's backward frees
  // and the model frees at this one's end; it counts only where both are checkpointed
  // (step_simulator.cpp, incoming_gradient).
  std::int64_t bwd_incoming_bytes = 0;
  // The root's tail only: the part of saved_activation_bytes made outside every module (the loss's
  // saved tensors), which the loss's backward frees before the root's pre-backward runs.
  std::int64_t loss_saved_bytes = 0;
  // The root's tail only: the part of saved_activation_bytes the training loop holds after the
  // backward (the model's output in a variable: `logits = model(x)`), alive until the next pass's
  // forward returns. Measured on a profile (caller_held_from_profile); 0 for model descriptions.
  std::int64_t caller_held_bytes = 0;
  // ... and the part it holds only through the backward, freed before the pass ends (`del out`
  // after loss.backward()).
  std::int64_t backward_held_bytes = 0;
  MeasuredExtra fwd_extra{}, bwd_extra{};       // profile replay only; zero for model descriptions
  // Activation checkpointing as a plan knob (FsdpPlan::checkpoint): what a checkpointed segment
  // keeps (its input) and its sub-modules for selective checkpointing. input_bytes 0 with saved
  // activations > 0 means unknown: a profile's unit keeps nothing then (docs/simulator.md limits).
  std::int64_t input_bytes = 0;
  // The share of fwd_ns a full-checkpointing rerun repeats. torch.utils.checkpoint (non-reentrant,
  // what checkpoint_wrapper uses) stops the rerun once the last tensor the unit's backward needs
  // is rebuilt, so the ops after it (a block's last projection and residual add) do not run
  // again. Profiles measure it (add_rerun_share_from_profile); 1 = the whole forward.
  double rerun_share = 1.0;
  std::vector<SimPart> parts{};
  ParallelShape parallel{};
};

struct SimModel {
  std::string name;
  std::vector<SimUnit> units;
  std::vector<SimSegment> segments;  // forward order
  int param_dtype_bytes = 2;   // unsharded parameters, all-gather, unsharded gradients
  int master_dtype_bytes = 4;  // sharded parameters and sharded gradients
  int reduce_dtype_bytes = 4;  // reduce-scatter input
  int optimizer_bytes_per_param = 8;  // AdamW exp_avg + exp_avg_sq in fp32
  TimeNs optimizer_ns = 0;            // optimizer step at the reference world size
  int optimizer_reference_world = 1;  // optimizer work scales with params / shard size
  double hbm_bytes_per_ns = 0;        // for copy-in/copy-out cost; 0 = copies are free (already in compute)
  std::int64_t other_memory_bytes = 0;  // CUDA context, workspace, inputs: constant over the step
  // What a profile holds beyond the model during each backward pass and not in forward (or, when
  // negative, less): the unexplained memory of the two phases told apart (sim_inputs.cpp,
  // calibrate_transients). Added at each backward's start, taken back at its end.
  std::int64_t other_backward_bytes = 0;
  // Device memory held during the optimizer step beyond the model's state then (a profile's, fitted
  // to its measured optimizer phase: sim_inputs.cpp); at the reference world size, like optimizer_ns.
  std::int64_t optimizer_temp_bytes = 0;
  MeasuredExtra optimizer_extra{};      // between the last backward range and the end of the step
  bool forward_only = false;  // a measured window of forward passes only: no backward, no optimizer step
  // zero_grad(set_to_none=False) (torchtitan's default while CUDA graphs are on): the sharded
  // gradients stay allocated from step to step, zeroed in place, and each reduce-scatter adds into
  // them; with set_to_none=True (PyTorch's default) they are made at each unit's reduce-scatter
  // and freed after the optimizer. A profile says which (add_kept_grads_from_profile).
  bool grads_kept = false;
  // With grads_kept: the loop's zero_grad() (set_to_none=True) runs after its forward, right before
  // loss.backward(): the sharded gradients live from the optimizer step through the next forward,
  // are freed there and made again at each reduce-scatter (add_kept_grads_from_profile).
  bool grads_freed_before_backward = false;
  int other_comm_world = 0;  // world size the non-FSDP collectives were measured at; 0 = keep them as measured
  // Model descriptions know their shapes (ParallelShape); profiles do not, so tensor, context and
  // expert parallelism are refused on them (pipeline parallelism works on either).
  bool has_parallel_shapes = false;
  // A profile of a job with tensor (or context) parallelism beside FSDP: the ranks each FSDP shard
  // group's parameters are further split over (meta rank<R>.model_parallel_ranks). The world is
  // that many times FSDP's; units hold what FSDP gathers (each rank's TP shard) and the other
  // dimensions' collectives are replayed as measured (profile_extract.cpp). 1: FSDP alone.
  int recorded_model_parallel = 1;

  std::int64_t param_bytes(int unit) const { return units[static_cast<std::size_t>(unit)].param_count * param_dtype_bytes; }
  std::int64_t total_params() const {
    std::int64_t p = 0;
    for (const auto& u : units) p += u.param_count;
    return p;
  }
  int find_unit(const std::string& fqn) const {
    for (std::size_t i = 0; i < units.size(); ++i)
      if (units[i].name == fqn) return static_cast<int>(i);
    return -1;
  }
  // The names of the second FSDP models in the recorded process (SimUnit::is_second_model_root).
  std::vector<std::string> second_model_roots() const {
    std::vector<std::string> roots;
    for (const auto& u : units)
      if (u.is_second_model_root()) roots.push_back(u.name);
    return roots;
  }
};

}  // namespace ss::sim
