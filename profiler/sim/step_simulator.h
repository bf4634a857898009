// The FSDP2 step simulator. compile_step() resolves a model, a plan and a cluster into per-unit
// costs and modes (O(units)); simulate() replays one optimizer step (all micro-batches) for one
// representative rank on four FIFO lanes: compute, the NCCL queue shared by all-gather and
// reduce-scatter, an optional separate reduce-scatter queue, and the HSDP all-reduce queue.
// World size changes costs, never the number of lanes, so 10,000 GPUs cost what 8 do.
// A toggle (set_reshard) plus simulate() is the GUI's and the planner's inner loop.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "profiler/sim/cluster_model.h"
#include "profiler/sim/fsdp_plan.h"
#include "profiler/sim/sim_model.h"

namespace ss::sim {

// Memory categories of PyTorch's FSDPMemTracker that a step simulation can tell apart.
enum class MemCat : std::uint8_t {
  ShardedParam, UnshardedParam, ShardedGrad, UnshardedGrad, OptimizerState, Activation,
  AllGatherBuffer, ReduceScatterBuffer, Other,
  Temporary,  // transient inside one segment's compute (measured per segment from a profile)
};
inline constexpr int kMemCatCount = 10;
const char* mem_cat_key(MemCat c);  // "sharded_param", ...

// Lanes 4-6 exist only with offload (FsdpPlan::offload): the two copy engines of the host link
// (each direction has its own) and the host CPU running the optimizer step.
// Lane 7 carries tensor / context / expert parallel collectives, which sit on the compute
// stream's critical path (the next op needs their result); lane 8 the pipeline's sends and receives.
enum class Lane : std::uint8_t {
  Compute = 0, Nccl = 1, ReduceScatter = 2, AllReduce = 3, HostToDevice = 4, DeviceToHost = 5, CpuOptimizer = 6,
  ModelParallel = 7, PipelineP2P = 8
};
inline constexpr int kLaneCount = 9;
inline constexpr int kNcclLaneCount = 3;  // lanes 1..3
// OtherComm and Idle: measured time replayed as-is on the compute stream (sim_model.h MeasuredExtra).
// Recompute: activation checkpointing's forward rerun, on the compute stream before the backward.
// HostToDevice / DeviceToHost / CpuOptimizer: offload's copies and host optimizer step.
enum class OpKind : std::uint8_t {
  Compute, CopyOut, RsCopyIn, Optimizer, AllGather, ReduceScatter, AllReduce, OtherComm, Idle,
  Recompute, HostToDevice, DeviceToHost, CpuOptimizer,
  TpAllReduce, TpAllGather, TpReduceScatter,  // Megatron TP (all-gather / reduce-scatter with SP)
  CpAllToAll, CpRing,                         // context parallel: Ulysses all-to-all, ring K/V passing
  EpAllToAll,                                 // MoE dispatch / combine
  PpSend                                      // pipeline: activations forward, gradients backward
};
// True for the model-parallel collectives above (TP, CP, EP).
inline bool is_model_parallel(OpKind k) { return k >= OpKind::TpAllReduce && k <= OpKind::EpAllToAll; }
enum class Phase : std::uint8_t { Forward, Backward, Optimizer };

inline constexpr int kKeepUnsharded = 0;  // reshard_after_forward=False
inline constexpr int kReshard = 1;        // reshard_after_forward=True; k >= 2: keep a 1/k slice

enum class Checkpoint : std::uint8_t { None, Full, Selective };
enum class Offload : std::uint8_t { None, Optimizer, Cpu };

// One FSDP unit as executed: a bucket of one or more model units gathered together.
struct ExecUnit {
  std::string name;          // member names joined by "+"
  std::vector<int> members;  // SimModel unit indices
  std::int64_t params = 0;
  std::int64_t gathered = 0;  // of them, what the unit's all-gather and reduce-scatter move (gathered_params)
  std::int64_t ag_bytes = 0;  // gathered bytes in param dtype
  int reshard = kReshard;
  bool is_root = false;
  TimeNs ag_ns = 0, ag_bwd_ns = 0, rs_ns = 0, ar_ns = 0, copyout_ns = 0, rs_copyin_ns = 0;
  TimeNs bwd_host_ns = 0;  // SimUnit::bwd_unshard_host_ns of the members
  int extra_fwd_gathers = 0;  // SimUnit::extra_fwd_gathers of the members
  int repeat_fwd_calls = 0;   // SimUnit::repeat_fwd_calls, the most of a member's
  int extra_bwd_gathers = 0;  // SimUnit::extra_bwd_gathers, the most of a member's
  // SimUnit::reduce_split of a unit alone (its own mesh only): the reduction's shares, issued one
  // after another, and their times (summing to rs_ns). Empty: one reduce-scatter.
  std::vector<double> rs_split;
  std::vector<TimeNs> rs_split_ns;
  bool frozen = false;        // every member is SimUnit::frozen: forward only
  bool frozen_in_trained_model = false;  // ... and SimUnit::frozen_in_trained_model: prefetched, resharded after backward
  // Of params and gathered, those with gradients (SimUnit::trainable_params): what is reduced and
  // what has gradients and optimizer state.
  std::int64_t trainable = 0, reduced = 0;
  bool has_fwd_list = false, has_bwd_list = false;
  std::vector<int> fwd_prefetch, bwd_prefetch;  // exec unit indices
  int first_seg = -1, last_seg = -1;
  Checkpoint checkpoint = Checkpoint::None;
  bool can_select = false;  // the plan gave this unit a selective pattern that matched sub-modules
  TimeNs h2d_ns = 0, d2h_ns = 0, cpu_opt_ns = 0;  // offload: shard up, sharded grads down, CPU update
  int shard = 1;  // FSDP group size of this unit (dp x cp, or dp x cp / ep for MoE experts)
  bool later_groups = false;  // parameter groups on their own mesh (SimUnit::apart_groups) wait after the gathered one
  // Of ag_bytes, what those groups gather over their own mesh of `later_shard` ranks (> 1), in a
  // collective of their own after the unit's (and reduce likewise); their share of ag_ns / rs_ns.
  std::int64_t later_ag_bytes = 0, later_rs_bytes = 0;
  int later_shard = 1;
  TimeNs later_ag_ns = 0, later_rs_ns = 0;
};

// One tensor / context / expert parallel collective (ExecSegment::mp_ops).
struct ParallelOp {
  OpKind kind;
  TimeNs ns;
  std::int64_t bytes;
  // What the backward issues for it (the forward's adjoint): TP all-gather <-> reduce-scatter.
  OpKind bwd_kind;
  TimeNs bwd_ns;
  bool in_fwd = true, in_bwd = true;  // e.g. a vocab-parallel embedding reduces only in forward
};

// What one segment saves and recomputes under one checkpointing mode.
struct CheckpointCost {
  std::int64_t saved = 0, recompute = 0;
  TimeNs recompute_ns = 0;
};

struct ExecSegment {
  int exec = 0;
  TimeNs fwd_ns = 0, bwd_ns = 0;
  std::int64_t saved_bytes = 0, recompute_bytes = 0;
  std::int64_t loss_saved_bytes = 0;  // SimSegment: freed by the loss's backward, before pre-backward
  std::int64_t caller_held_bytes = 0;  // SimSegment: held by the training loop to the next pass's forward end
  std::int64_t backward_held_bytes = 0;  // SimSegment: held by the training loop to the backward's end
  std::int64_t fwd_temp_bytes = 0, bwd_temp_bytes = 0;  // SimSegment
  std::int64_t bwd_incoming_bytes = 0;                  // SimSegment
  // Of its unit's unsharded gradients, the share this segment's backward makes (its parameters'):
  // a bucket member's at the end of that member's backward, a root's tail's in the output head's
  // and the embedding's at the very end. A unit's shares are weights (a pipeline stage holds part
  // of a root); none at all: every gradient at the end of the unit's first backward segment.
  double grad_share = 0;
  TimeNs fwd_other_ns = 0, bwd_other_ns = 0;  // non-FSDP collectives, scaled to the world size
  TimeNs fwd_idle_ns = 0, bwd_idle_ns = 0;    // measured GPU idle
  TimeNs recompute_ns = 0;  // activation checkpointing: forward rerun before the backward
  CheckpointCost by_mode[3]{};  // indexed by Checkpoint; [None] = the model's own values
  // Model-parallel collectives of one forward pass, in issue order; the backward issues the same
  // ops in reverse order (the gradient of an all-reduce is an all-reduce, of an all-gather a
  // reduce-scatter, of an all-to-all the inverse all-to-all, each of the same size).
  std::vector<ParallelOp> mp_ops;
  // Ring attention: per attention and pass, (cp-1) K/V exchanges hidden behind the score work.
  int ring_attentions = 0, ring_steps = 0;
  TimeNs ring_fwd_ns = 0, ring_bwd_ns = 0, ring_core_fwd_ns = 0, ring_core_bwd_ns = 0;
  std::int64_t ring_step_bytes = 0;
};

// One pipeline stage (or, interleaved, one model chunk: a virtual stage): the exec units and
// segments it runs, simulated alone for one micro-batch (pipeline.cpp schedules the micro-batches).
struct StageSpec {
  int first_seg = 0, last_seg = 0;  // segment range of the parent CompiledStep
  std::int64_t send_bytes = 0;      // activation sent to the next virtual stage per micro-batch
  TimeNs send_ns = 0;
  // The root is split between the first stage (embeddings) and the last (norm + head): this
  // stage's part of it, costed for its own parameters (has_root_part false: no root here).
  bool has_root_part = false;
  ExecUnit root_part;
  double root_share = 1.0;  // root_part's share of the root's parameters
};

struct CompiledStep {
  std::vector<ExecUnit> units;
  std::vector<ExecSegment> segments;
  std::vector<int> exec_of_unit;  // SimModel unit -> exec unit
  std::vector<int> fwd_order, bwd_order;  // exec units by pre-forward / pre-backward hook order
  int world = 1, shard = 1, replicate = 1;
  int micro_batches = 1;
  bool forward_only = false;  // SimModel::forward_only: simulate the forward passes only
  bool grads_kept = false;    // SimModel::grads_kept (no offload): sharded grads live all step
  bool grads_freed_before_backward = false;  // SimModel::grads_freed_before_backward, with grads_kept
  bool sync_every_microbatch = true;
  bool separate_rs = false;
  int param_bytes = 2, master_bytes = 4, reduce_bytes = 4, optimizer_bytes = 8;
  TimeNs optimizer_ns = 0;
  TimeNs optimizer_other_ns = 0, optimizer_idle_ns = 0;
  double overlap_slowdown = 0;
  bool comm_serialized = false;  // ClusterModel::comm_serialized
  // Host time the buckets take out of each pass: their merged members' per-unit cost
  // (ClusterModel::fsdp_unit_*_us), as far as the members' segments had it.
  TimeNs merged_host_saved_ns = 0;
  std::int64_t other_memory_bytes = 0;
  std::int64_t other_backward_bytes = 0;  // SimModel::other_backward_bytes
  std::int64_t optimizer_temp_bytes = 0;  // SimModel::optimizer_temp_bytes at this shard (optimizer on the device only)
  int gpus_per_node = 8;
  Offload offload = Offload::None;
  int offload_prefetch_depth = 1;
  bool pipelined_optimizer = false;
  int root_exec = -1;  // the exec unit holding the root (split over the first and last pipeline stage)
  // Units gathered in backward stay unsharded until the last micro-batch's backward
  // (set_reshard_after_backward(False)): a pipeline stage under torch.distributed.pipelining, or
  // gradient accumulation with FsdpPlan::reshard_after_backward false.
  bool hold_params_until_last_backward = false;
  // Parallelism around FSDP (FsdpPlan::parallel): world = pp x dp x cp x tp.
  Parallelism par;
  // A profile's own model parallelism beside FSDP (SimModel::recorded_model_parallel): innermost,
  // like tp, and replayed as measured.
  int recorded_model_parallel = 1;
  // The ranks between two ranks of an FSDP group: tp, and the profile's own model parallelism.
  int inner_ranks() const { return par.tp * recorded_model_parallel; }
  int dp = 1;
  // Pipeline (par.pp > 1): virtual stages in order (pp x pp_virtual); virtual stage j runs on rank
  // stage j % pp. Each sub-step is this step restricted to the stage's units, one micro-batch.
  std::vector<StageSpec> stages;
};

// Throws ProfileError(MalformedTable) for plans that name unknown modules or impossible degrees.
CompiledStep compile_step(const SimModel& model, const FsdpPlan& plan, const ClusterModel& cluster);

// Whether an FSDP all-gather / reduce-scatter op of exec unit `exec` is a collective call. FSDP2
// calls none for a shard group of one: its unshard reuses the local shard and its reduce-scatter
// is a copy (_fsdp_param_group.py, _fsdp_collectives.py; none in H100 / H200 recordings). Such ops
// stay in the schedule at zero time, so the buffers keep their lifetimes, but are not counted or
// written as collectives.
inline bool fsdp_collective_called(const CompiledStep& s, int exec) {
  return exec < 0 || s.units[static_cast<std::size_t>(exec)].shard > 1;
}
// Changes one unit's reshard_after_forward (kKeepUnsharded, kReshard or k); O(1).
void set_reshard(CompiledStep& step, int exec, int mode, const ClusterModel& cluster);
// Changes one unit's activation checkpointing; O(segments). Selective needs can_select (else Full);
// the root and units of an already-checkpointed model description keep their own values.
void set_checkpoint(CompiledStep& step, int exec, Checkpoint mode);
// True when checkpointing this unit changes anything (it saves more than its input).
bool checkpointable(const CompiledStep& step, int exec);
// Glob match of a selective pattern against a sub-module name ('*' and '?').
bool name_matches(const std::string& pattern, const std::string& name);

struct SimOp {
  TimeNs start, end;
  std::int64_t bytes;
  std::int32_t exec;  // -1 for the optimizer
  std::int32_t micro;
  Lane lane;
  OpKind kind;
  Phase phase;
  bool apart = false;  // an all-gather / reduce-scatter of the unit's groups on their own mesh (ExecUnit::later_shard)
};

struct MemEvent {
  TimeNs time;
  std::int64_t delta;
  std::int32_t exec;  // owner; -1 = not a unit
  MemCat cat;
};

struct UnitMemory {
  std::array<std::int64_t, kMemCatCount> at_peak{};  // this unit's bytes when the rank peaks
  std::int64_t own_peak = 0;                         // the most this unit ever holds
};

struct SimResult {
  TimeNs step_ns = 0;
  TimeNs forward_end_ns = 0, backward_end_ns = 0;  // the last micro-batch's passes end (compute stream)
  std::vector<std::pair<TimeNs, TimeNs>> backward_passes;  // each micro-batch's backward, start to end (compute stream)
  TimeNs compute_busy_ns = 0;  // compute lane busy (kernels, copies, optimizer)
  TimeNs other_comm_ns = 0;    // measured non-FSDP collectives replayed on the compute lane
  TimeNs idle_ns = 0;          // measured GPU idle replayed on the compute lane
  TimeNs exposed_comm_ns = 0;  // step time the compute lane waits for FSDP's collectives
  TimeNs comm_busy_ns = 0;     // all NCCL lanes
  int all_gathers = 0, reduce_scatters = 0, all_reduces = 0;
  int recomputes = 0;           // checkpointed segments' forward reruns
  TimeNs recompute_ns = 0;      // their time on the compute lane
  TimeNs host_copy_ns = 0;      // offload: both copy lanes busy
  std::int64_t host_copy_bytes = 0;
  TimeNs cpu_optimizer_ns = 0;  // offload: host CPU optimizer busy
  std::int64_t peak_bytes = 0;
  TimeNs peak_time = 0;
  int peak_exec = -1;  // exec unit computing at the peak (-1: none / optimizer)
  Phase peak_phase = Phase::Forward;
  std::array<std::int64_t, kMemCatCount> peak_by_category{};
  std::int64_t min_bytes = 0;  // lowest total (a negative value would be a bug)
  std::vector<SimOp> ops;         // in issue order
  std::vector<MemEvent> memory;   // sorted by time
  std::vector<UnitMemory> unit_memory;  // per exec unit (detail only)
  // Parallelism around FSDP: model-parallel collectives (count, bytes, lane busy time) and the
  // pipeline's sends.
  int tp_collectives = 0, cp_collectives = 0, ep_collectives = 0, p2p_sends = 0;
  std::int64_t tp_bytes = 0, cp_bytes = 0, ep_bytes = 0, p2p_bytes = 0;
  TimeNs model_parallel_ns = 0;          // their lane's busy time
  TimeNs model_parallel_exposed_ns = 0;  // the compute stream's wait for them (not in exposed_comm_ns)
  // Pipeline only: one entry per rank stage; the result's ops and memory are those of `shown_stage`
  // (the one that finishes last), step_ns and peak_bytes the maxima over stages.
  struct Stage {
    std::string units;       // first .. last unit names
    TimeNs fwd_ns = 0, bwd_ns = 0, busy_ns = 0, end_ns = 0;  // per micro-batch; busy over the step
    int max_in_flight = 0;   // micro-batches whose activations it holds at once
    std::int64_t peak_bytes = 0;
  };
  std::vector<Stage> stages;
  int shown_stage = -1;
  TimeNs bubble_ns = 0;  // the shown stage's idle time inside the schedule
};

// detail: also fill unit_memory (per-module breakdown); ops and memory are always filled.
SimResult simulate(const CompiledStep& step, bool detail = false);

// Rules the simulator applies that the search's bounds (search.cpp) apply too.
// What an exec unit keeps on the device for the whole step: its sharded parameters (unless
// offloaded to the host) and its optimizer states (only without offload).
struct UnitStateBytes {
  std::int64_t sharded_params = 0, optimizer_states = 0;
};
inline UnitStateBytes unit_state_bytes(const CompiledStep& s, const ExecUnit& u) {
  UnitStateBytes b;
  if (s.offload != Offload::Cpu) b.sharded_params = u.params * s.master_bytes / u.shard;
  if (s.offload == Offload::None) b.optimizer_states = u.trainable * s.optimizer_bytes / u.shard;
  return b;
}
// Ring attention's time on the compute stream beyond the score work it hides behind.
inline TimeNs ring_exposed_ns(const ExecSegment& sg, bool fwd) {
  if (sg.ring_attentions <= 0) return 0;
  return std::max<TimeNs>(0, (fwd ? sg.ring_fwd_ns - sg.ring_core_fwd_ns : sg.ring_bwd_ns - sg.ring_core_bwd_ns) * sg.ring_attentions);
}

}  // namespace ss::sim
