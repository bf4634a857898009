// simulate(): one optimizer step on the lanes of one representative rank, following FSDP2's
// ordering rules (research/simulator.md §1.2, docs/simulator.md). Ops are processed in the order
// the CPU issues them; every dependency points to an op processed earlier, so one pass suffices.
#include <algorithm>
#include <cmath>
#include <limits>

#include "profiler/sim/compile_internal.h"
#include "profiler/sim/step_simulator.h"

namespace ss::sim {

const char* mem_cat_key(MemCat c) {
  switch (c) {
    case MemCat::ShardedParam: return "sharded_param";
    case MemCat::UnshardedParam: return "unsharded_param";
    case MemCat::ShardedGrad: return "sharded_grad";
    case MemCat::UnshardedGrad: return "unsharded_grad";
    case MemCat::OptimizerState: return "optimizer_state";
    case MemCat::Activation: return "activation";
    case MemCat::AllGatherBuffer: return "all_gather_buffer";
    case MemCat::ReduceScatterBuffer: return "reduce_scatter_buffer";
    case MemCat::Other: return "other";
    case MemCat::Temporary: return "temporary";
  }
  return "?";
}

namespace {

constexpr TimeNs kNever = std::numeric_limits<TimeNs>::max();

class StepRun {
 public:
  StepRun(const CompiledStep& s, SimResult& r) : s_(s), r_(r), unit_(s.units.size()) {
    r_.ops.reserve(s.units.size() * 8 * static_cast<std::size_t>(s.micro_batches) + 8);
    r_.memory.reserve(s.units.size() * 16 * static_cast<std::size_t>(s.micro_batches) + 8);
  }

  void run() {
    start();
    for (int mb = 0; mb < s_.micro_batches; ++mb) {
      forward_pass(mb);
      r_.forward_end_ns = lane_[0];
      if (!s_.forward_only) backward_pass(mb, mb == s_.micro_batches - 1);
      r_.backward_end_ns = lane_[0];
      if (!s_.forward_only) r_.backward_passes.emplace_back(r_.forward_end_ns, r_.backward_end_ns);
    }
    if (s_.forward_only) {  // a measured window of forward passes: no backward, no optimizer step
      r_.step_ns = lane_[0];
      return;
    }
    finish();
  }

  // The passes one at a time, in any order (the pipeline runs a stage's micro-batches in its
  // schedule's order): state carries over, each pass starts at now() and ends at now().
  void start() { persistent_state(); }
  void forward_pass(int micro) {
    micro_ = micro;
    forward();
  }
  void backward_pass(int micro, bool last) {
    micro_ = micro;
    backward(last);
  }
  TimeNs now() const { return lane_[0]; }

  // The optimizer step after the last backward.
  void finish() {
    if (s_.offload == Offload::None) {
      // Optimizer on the compute stream, then zero_grad(set_to_none=True) frees the sharded grads.
      const TimeNs t0 = lane_[0];
      op(Lane::Compute, OpKind::Optimizer, Phase::Optimizer, -1, t0, s_.optimizer_ns, 0);
      transient(t0, s_.optimizer_temp_bytes, -1);
    } else {
      host_optimizer();
    }
    measured(Phase::Optimizer, -1, s_.optimizer_other_ns, s_.optimizer_idle_ns);
    if (!s_.grads_kept)
      for (std::size_t e = 0; e < unit_.size(); ++e)
        if (unit_[e].sharded_grad) mem(lane_[0], -grad_bytes(e), static_cast<int>(e), MemCat::ShardedGrad);
    r_.step_ns = lane_[0];
  }

 private:
  struct UnitState {
    bool issued = false;      // all-gather issued in the current pass
    TimeNs ag_end = 0;
    std::int64_t ag_buffer = 0;  // forward AG buffer bytes waiting to be freed at the next unit's wait
    std::int64_t resident = 0;  // unsharded parameter bytes currently held
    bool grads_held = false;    // unsharded gradients allocated (no-sync accumulation)
    TimeNs grads_at = 0;        // when they were first made (the end of the unit's first backward segment)
    bool making = false;        // its backward segments are making them (from the first to the post-backward)
    std::vector<std::pair<TimeNs, double>> grads_made;  // (when, ExecSegment::grad_share) as they were made
    bool grads_written = false; // their allocation is in the memory events (see backward)
    bool sharded_grad = false;
    bool h2d = false;         // offload: shard copied up in the current pass
    bool shard_up = false;    // ... and still on the device (freed when its all-gather ends)
    TimeNs h2d_end = 0;
  };

  static constexpr int li(Lane l) { return static_cast<int>(l); }
  std::int64_t shard_bytes(int e) const { return eu(e).params * s_.master_bytes / eu(e).shard; }

  // Offload's step end. Cpu: the host updates its shards once every gradient is down (pipelined:
  // already done unit by unit in backward). Optimizer: gradients down, CPU update, parameters up,
  // for the whole model after backward (pipelined: unit by unit in backward). The step ends when
  // the last of these and the compute stream are done.
  void host_optimizer() {
    const bool pipelined = s_.pipelined_optimizer;
    TimeNs d2h = 0, cpu = 0, h2d = 0;
    std::int64_t grads = 0, shards = 0;
    for (std::size_t e = 0; e < s_.units.size(); ++e) {
      d2h += s_.units[e].d2h_ns, cpu += s_.units[e].cpu_opt_ns, h2d += s_.units[e].h2d_ns;
      grads += grad_bytes(e), shards += shard_bytes(static_cast<int>(e));
    }
    if (s_.offload == Offload::Cpu) {
      if (!pipelined) op(Lane::CpuOptimizer, OpKind::CpuOptimizer, Phase::Optimizer, -1, std::max(lane_[0], d2h_end_), cpu, 0);
      lane_[0] = std::max({lane_[0], lane_[li(Lane::CpuOptimizer)], d2h_end_});
      return;
    }
    if (!pipelined) {
      const TimeNs a = op(Lane::DeviceToHost, OpKind::DeviceToHost, Phase::Optimizer, -1, lane_[0], d2h, grads);
      const TimeNs b = op(Lane::CpuOptimizer, OpKind::CpuOptimizer, Phase::Optimizer, -1, a + d2h, cpu, 0);
      op(Lane::HostToDevice, OpKind::HostToDevice, Phase::Optimizer, -1, b + cpu, h2d, shards);
    }
    lane_[0] = std::max(lane_[0], lane_[li(Lane::HostToDevice)]);
  }

  // Offload Cpu: the unit's sharded parameters are copied up before its all-gather.
  void shard_up(int e, TimeNs ready, Phase ph) {
    UnitState& st = unit_[static_cast<std::size_t>(e)];
    if (st.h2d) return;
    const TimeNs t = op(Lane::HostToDevice, OpKind::HostToDevice, ph, e, ready, eu(e).h2d_ns, shard_bytes(e));
    mem(t, shard_bytes(e), e, MemCat::ShardedParam);
    st.h2d = st.shard_up = true;
    st.h2d_end = t + eu(e).h2d_ns;
  }
  void free_unused_shards() {  // prefetched shards whose all-gather this pass did not need
    for (std::size_t e = 0; e < unit_.size(); ++e)
      if (unit_[e].shard_up) {
        mem(lane_[0], -shard_bytes(static_cast<int>(e)), static_cast<int>(e), MemCat::ShardedParam);
        unit_[e].shard_up = false;
      }
  }

  const ExecUnit& eu(int e) const { return s_.units[static_cast<std::size_t>(e)]; }
  std::int64_t grad_bytes(std::size_t e) const { return s_.units[e].trainable * s_.master_bytes / s_.units[e].shard; }

  void mem(TimeNs t, std::int64_t delta, int exec, MemCat c) {
    if (delta != 0) r_.memory.push_back({t, delta, exec, c});
  }

  // A segment's temporaries: alive from its compute's start to its end (lane_[0] after the op).
  void transient(TimeNs start, std::int64_t bytes, int exec) {
    if (bytes <= 0) return;
    mem(start, bytes, exec, MemCat::Temporary);
    mem(lane_[0], -bytes, exec, MemCat::Temporary);
  }

  void persistent_state() {
    // The previous step's output (ExecSegment::caller_held_bytes): alive from the step's start to
    // the root's tail, where the forward returns and the loop's variable takes the new one.
    for (const ExecSegment& sg : s_.segments)
      if (sg.caller_held_bytes > 0) {
        caller_held_ = sg.caller_held_bytes, caller_held_exec_ = sg.exec;
        mem(0, caller_held_, caller_held_exec_, MemCat::Activation);
      }
    // Offload: Cpu keeps sharded parameters and optimizer states on the host, Optimizer the states.
    for (std::size_t e = 0; e < unit_.size(); ++e) {
      const UnitStateBytes b = unit_state_bytes(s_, s_.units[e]);
      if (s_.offload != Offload::Cpu) mem(0, b.sharded_params, static_cast<int>(e), MemCat::ShardedParam);
      if (s_.offload == Offload::None) mem(0, b.optimizer_states, static_cast<int>(e), MemCat::OptimizerState);
      // A frozen unit kept unsharded was gathered in an earlier step and never resharded since
      // (another model's: the trained model's own are resharded after every backward).
      if (s_.units[e].frozen && !s_.units[e].frozen_in_trained_model && s_.units[e].reshard == kKeepUnsharded) {
        mem(0, s_.units[e].ag_bytes, static_cast<int>(e), MemCat::UnshardedParam);
        unit_[e].resident = s_.units[e].ag_bytes;
      }
      // Kept from the previous step (zero_grad(set_to_none=False)): no reduce-scatter makes them.
      if (s_.grads_kept && s_.units[e].reduced > 0) {
        mem(0, grad_bytes(e), static_cast<int>(e), MemCat::ShardedGrad);
        unit_[e].sharded_grad = true;
      }
    }
    mem(0, s_.other_memory_bytes, -1, MemCat::Other);
  }

  // Compute stretched by the interference of in-flight collectives (cluster.overlap_slowdown).
  TimeNs stretch(TimeNs start, TimeNs work) {
    const double sd = s_.overlap_slowdown;
    if (sd <= 0 || work <= 0) return start + work;
    double t = double(start), rem = double(work);
    const double slow = 1.0 / (1.0 + sd);
    for (;;) {
      bool busy = false;
      double next = std::numeric_limits<double>::infinity();
      for (int l = 0; l < kNcclLaneCount; ++l) {
        auto& iv = comm_[l];
        auto& p = ptr_[l];
        while (p < iv.size() && double(iv[p].second) <= t) ++p;
        if (p < iv.size()) {
          if (double(iv[p].first) <= t) {
            busy = true;
            next = std::min(next, double(iv[p].second));
          } else {
            next = std::min(next, double(iv[p].first));
          }
        }
      }
      const double rate = busy ? slow : 1.0;
      if (t + rem / rate <= next) return static_cast<TimeNs>(std::llround(t + rem / rate));
      rem -= (next - t) * rate;
      t = next;
    }
  }

  TimeNs op(Lane lane, OpKind kind, Phase ph, int exec, TimeNs ready, TimeNs dur, std::int64_t bytes) {
    const int li = static_cast<int>(lane);
    const bool nccl = li >= 1 && li <= kNcclLaneCount;
    const bool blocks_compute = s_.comm_serialized && nccl;
    const TimeNs start = std::max({lane_[li], ready, blocks_compute ? lane_[0] : TimeNs{0}});
    TimeNs end;
    if (kind == OpKind::OtherComm || kind == OpKind::Idle) {
      end = start + dur;  // replayed as measured: no interference stretch
      (kind == OpKind::OtherComm ? r_.other_comm_ns : r_.idle_ns) += dur;
    } else if (lane == Lane::Compute) {
      end = stretch(start, dur);
      r_.compute_busy_ns += end - start;
      if (kind == OpKind::Recompute) ++r_.recomputes, r_.recompute_ns += end - start;
    } else if (lane == Lane::ModelParallel || lane == Lane::PipelineP2P) {
      end = start + dur;
      if (lane == Lane::ModelParallel) r_.model_parallel_ns += dur;
    } else if (!nccl) {  // offload's copy engines and host CPU: no NCCL interference
      end = start + dur;
      if (kind == OpKind::CpuOptimizer) r_.cpu_optimizer_ns += dur;
      else r_.host_copy_ns += dur, r_.host_copy_bytes += bytes;
    } else {
      end = start + dur;
      r_.comm_busy_ns += dur;
      comm_[li - 1].emplace_back(start, end);
      const bool issued = fsdp_collective_called(s_, exec);
      if (kind == OpKind::AllGather) r_.all_gathers += issued;
      else if (kind == OpKind::ReduceScatter) r_.reduce_scatters += issued;
      else ++r_.all_reduces;
    }
    lane_[li] = end;
    if (blocks_compute) lane_[0] = end;
    r_.ops.push_back({start, end, bytes, exec, micro_, lane, kind, ph});
    return start;
  }

  // A segment's measured non-FSDP collectives, then its measured idle, right after its compute.
  // The order inside a segment does not change the step time (no hook waits on a point inside a
  // segment); it only matters for overlap_slowdown, which these fixed ops do not feel.
  void measured(Phase ph, int exec, TimeNs other_ns, TimeNs idle_ns) {
    if (other_ns > 0) op(Lane::Compute, OpKind::OtherComm, ph, exec, 0, other_ns, 0);
    if (idle_ns > 0) op(Lane::Compute, OpKind::Idle, ph, exec, 0, idle_ns, 0);
  }

  // A segment's tensor / context / expert parallel collectives, after its compute (which started
  // at `compute_start`): each blocks the compute stream (the next op consumes its result). Ring
  // attention's K/V exchanges run beside the score work and only their excess is exposed.
  // `rerun`: a full checkpointing rerun in backward issues the forward's collectives, labelled
  // with the backward phase it runs in (a pipeline replays a slot's ops by phase).
  void model_parallel(const ExecSegment& sg, int e, Phase ph, TimeNs compute_start, bool rerun = false) {
    const bool fwd = ph == Phase::Forward || rerun;
    if (sg.ring_attentions > 0) {
      const TimeNs ring = (fwd ? sg.ring_fwd_ns : sg.ring_bwd_ns) * sg.ring_attentions;
      const std::int64_t bytes = sg.ring_step_bytes * (fwd ? 1 : 2) * sg.ring_steps * sg.ring_attentions;
      op(Lane::ModelParallel, OpKind::CpRing, ph, e, compute_start, ring, bytes);
      r_.cp_collectives += sg.ring_steps * sg.ring_attentions;
      r_.cp_bytes += bytes;
      lane_[0] += ring_exposed_ns(sg, fwd);
      r_.model_parallel_exposed_ns += ring_exposed_ns(sg, fwd);
    }
    const std::size_t n = sg.mp_ops.size();
    for (std::size_t k = 0; k < n; ++k) {
      const ParallelOp& p = sg.mp_ops[fwd ? k : n - 1 - k];
      if (!(fwd ? p.in_fwd : p.in_bwd)) continue;
      const OpKind kind = fwd ? p.kind : p.bwd_kind;
      op(Lane::ModelParallel, kind, ph, e, lane_[0], fwd ? p.ns : p.bwd_ns, p.bytes);
      r_.model_parallel_exposed_ns += lane_[li(Lane::ModelParallel)] - lane_[0];
      lane_[0] = lane_[li(Lane::ModelParallel)];
      int& count = kind == OpKind::EpAllToAll ? r_.ep_collectives : kind == OpKind::CpAllToAll ? r_.cp_collectives : r_.tp_collectives;
      std::int64_t& bytes = kind == OpKind::EpAllToAll ? r_.ep_bytes : kind == OpKind::CpAllToAll ? r_.cp_bytes : r_.tp_bytes;
      ++count;
      bytes += p.bytes;
    }
  }

  // An all-gather on the shared NCCL queue; its buffer lives until the copy-out frees it.
  void all_gather(int e, TimeNs ready, Phase ph) {
    UnitState& st = unit_[static_cast<std::size_t>(e)];
    const ExecUnit& u = eu(e);
    const TimeNs dur = ph == Phase::Forward ? u.ag_ns : u.ag_bwd_ns;
    const std::int64_t bytes = gather_buffer_bytes(u, ph);
    if (s_.offload == Offload::Cpu) {
      // The shard comes up from the host first; OOGC's multi-layer prefetch also sends the next
      // depth-1 shards of this pass's order, all issued now. The copies are issued by the hook
      // that issues this all-gather, so no earlier than the compute stream gets there (without
      // this, every shard would be copied up at the start of backward and held until its turn).
      ready = std::max(ready, lane_[0]);
      shard_up(e, ready, ph);
      const auto& order = ph == Phase::Forward ? s_.fwd_order : s_.bwd_order;
      int v = e;
      for (int k = 1; k < s_.offload_prefetch_depth; ++k) {
        v = next_in(order, v);
        if (v < 0) break;
        if (needs_gather(v)) shard_up(v, ready, ph);
      }
      ready = std::max(ready, st.h2d_end);
    }
    // Groups on a mesh of their own are gathered in a collective of their own, right after.
    const TimeNs later = u.later_ag_ns > 0 && u.ag_ns > 0 ? static_cast<TimeNs>(std::llround(double(dur) * double(u.later_ag_ns) / double(u.ag_ns))) : 0;
    const std::int64_t later_bytes = later > 0 ? u.later_ag_bytes : 0;
    const TimeNs start = op(Lane::Nccl, OpKind::AllGather, ph, e, ready, dur - later, u.ag_bytes - later_bytes);
    st.issued = true;
    st.ag_end = start + dur - later;
    if (later > 0) {
      st.ag_end = op(Lane::Nccl, OpKind::AllGather, ph, e, st.ag_end, later, later_bytes) + later;
      r_.ops.back().apart = true;
    }
    mem(start, bytes, e, MemCat::AllGatherBuffer);
    if (st.shard_up) {  // the up-copied shard is the all-gather's input: free once it is done
      mem(st.ag_end, -shard_bytes(e), e, MemCat::ShardedParam);
      st.shard_up = false;
    }
  }

  // A fully checkpointed segment keeps its input, the tensor the segment before it made. Where that
  // segment is not checkpointed, its saved activations already hold that tensor (the root's
  // embedding output, layers.0's input): counted twice, mlp's checkpointed step peaked 2.1 MB
  // (one block input) over its job. Its bytes, of what segment i keeps.
  std::int64_t input_counted_before(std::size_t i) const {
    const ExecSegment& sg = s_.segments[i];
    if (i == 0 || eu(sg.exec).checkpoint != Checkpoint::Full || sg.recompute_ns <= 0) return 0;
    const ExecSegment& prev = s_.segments[i - 1];
    if (prev.exec == sg.exec || eu(prev.exec).checkpoint != Checkpoint::None) return 0;
    return std::min(sg.saved_bytes, prev.saved_bytes);
  }

  // The gradient of segment i's output, alive through its backward where the model holds nothing in
  // its place: when segment i and the next (its output's consumer) are both fully checkpointed, the
  // output is the next one's kept input, freed at the next one's backward end in model and job
  // alike, and the gradient comes on top. Otherwise the model still holds the output in segment i's
  // saved set (or its rebuilt set) where the job, having freed it, holds its gradient: the same
  // bytes. Measured on CPU (2026-12-07): llama's blocks are handed 520,192 B, mlp's 2,097,152 B;
  // left out, a checkpointed step's peak came out 0.8 % and 1.3 % low.
  std::int64_t incoming_gradient(std::size_t i) const {
    const ExecSegment& sg = s_.segments[i];
    if (sg.bwd_incoming_bytes <= 0 || i + 1 >= s_.segments.size()) return 0;
    const ExecSegment& next = s_.segments[i + 1];
    auto checkpointed = [&](const ExecSegment& s) { return eu(s.exec).checkpoint == Checkpoint::Full && s.recompute_ns > 0; };
    return next.exec != sg.exec && checkpointed(sg) && checkpointed(next) ? sg.bwd_incoming_bytes : 0;
  }

  // The unit's unsharded gradients as they were made (ExecSegment::grad_share), those made before
  // `before` only: gradients copied into the reduce-scatter input at the very instant they were
  // made never count. Returns the bytes written.
  std::int64_t write_grads(int e, std::int64_t bytes, TimeNs before) {
    const UnitState& st = unit_[static_cast<std::size_t>(e)];
    double total = 0;
    for (const auto& part : st.grads_made) total += part.second;
    if (total <= 0) {  // no shares: all of them at the end of the first backward segment
      if (st.grads_at >= before) return 0;
      mem(st.grads_at, bytes, e, MemCat::UnshardedGrad);
      return bytes;
    }
    std::int64_t written = 0;
    double cumulative = 0;
    for (const auto& [t, share] : st.grads_made) {
      // Cumulative rounding: the parts add up to `bytes` exactly.
      const auto upto = static_cast<std::int64_t>(std::llround(double(bytes) * (cumulative + share) / total));
      const std::int64_t part = upto - static_cast<std::int64_t>(std::llround(double(bytes) * cumulative / total));
      cumulative += share;
      if (t >= before) continue;
      mem(t, part, e, MemCat::UnshardedGrad);
      written += part;
    }
    return written;
  }

  bool needs_gather(int e) const { return unit_[static_cast<std::size_t>(e)].resident < eu(e).ag_bytes; }
  // An all-gather's buffer: the unit's parameters, less in backward the 1/k slice a unit resharded
  // to 1/k after forward still holds.
  static std::int64_t gather_buffer_bytes(const ExecUnit& u, Phase ph) {
    return ph == Phase::Forward || u.reshard <= kReshard ? u.ag_bytes : u.ag_bytes - u.ag_bytes / u.reshard;
  }

  void forward() {
    for (auto& st : unit_) st.issued = st.h2d = false;
    // The first all-gather waits for the optimizer (or the previous micro-batch's backward).
    TimeNs prev_copyout_end = lane_[0];
    int prev_unit = -1;
    for (std::size_t i = 0; i < s_.segments.size(); ++i) {
      const ExecSegment& sg = s_.segments[i];
      const int e = sg.exec;
      UnitState& st = unit_[static_cast<std::size_t>(e)];
      const ExecUnit& u = eu(e);
      if (static_cast<int>(i) == u.first_seg) {  // pre_forward(u)
        bool gathered = false;
        if (needs_gather(e)) {
          if (!st.issued) all_gather(e, prev_copyout_end, Phase::Forward);
          gathered = true;
        }
        const TimeNs wait = std::max(lane_[0], gathered ? st.ag_end : 0);
        // wait_for_unshard(u) frees the previous unit's all-gather buffer (two alive at most).
        if (prev_unit >= 0) free_ag_buffer(prev_unit, wait);
        if (gathered) {
          const TimeNs t = op(Lane::Compute, OpKind::CopyOut, Phase::Forward, e, wait, u.copyout_ns, u.ag_bytes);
          mem(t, u.ag_bytes - st.resident, e, MemCat::UnshardedParam);
          st.resident = u.ag_bytes;
          // FSDP2 keeps a forward all-gather's buffer past its copy-out and frees it at the next
          // parameter group's wait (FSDPParamGroup.wait_for_unshard): the next unit's, or this
          // unit's own other group right after (torchtitan's routed experts on their own mesh:
          // the MoE trace of docs/accuracy.md frees each block's buffer in its `[pg=1]`
          // pre-forward, before the next block's is made; held to the next unit's, the model
          // predicted that run's forward peak 3 to 5 % high). That group, the unit's last, keeps
          // its own buffer to the next unit's wait when it gathers one (experts over dp_shard / ep
          // > 1 ranks: each block's 0.79 MB in a 4-rank trace).
          st.ag_buffer = u.ag_bytes;
          if (u.later_groups) {
            mem(t + u.copyout_ns, -(u.ag_bytes - u.later_ag_bytes), e, MemCat::AllGatherBuffer);
            st.ag_buffer = u.later_ag_bytes;
          }
        }
        prev_copyout_end = std::max(lane_[0], wait);
        prev_unit = e;
        // Implicit prefetch: the next unit's AG can start once this copy-out is done (the CPU
        // issues it while this unit computes). Explicit lists replace it.
        prefetch(e, prev_copyout_end, Phase::Forward);
      }
      if (u.is_root && static_cast<int>(i) == u.last_seg && u.first_seg != u.last_seg && prev_unit >= 0) {
        // The root's tail holds the loss, which runs after the root's post-forward has released
        // the last all-gather buffer (profile_extract.cpp: backward_starts).
        free_ag_buffer(prev_unit, lane_[0]);
      }
      if (sg.caller_held_bytes > 0 && caller_held_ > 0) {  // the loop's variable lets go of the previous output
        mem(lane_[0], -caller_held_, caller_held_exec_, MemCat::Activation);
        caller_held_ = 0;
      }
      const TimeNs t = op(Lane::Compute, OpKind::Compute, Phase::Forward, e, 0, sg.fwd_ns, 0);
      model_parallel(sg, e, Phase::Forward, t);
      mem(t, sg.saved_bytes - input_counted_before(i), e, MemCat::Activation);
      transient(t, sg.fwd_temp_bytes, e);
      measured(Phase::Forward, e, sg.fwd_other_ns, sg.fwd_idle_ns);
      if (static_cast<int>(i) == u.last_seg) {  // post_forward(u): reshard
        const std::int64_t keep = u.reshard == kKeepUnsharded ? u.ag_bytes : u.reshard == kReshard ? 0 : u.ag_bytes / u.reshard;
        mem(lane_[0], keep - st.resident, e, MemCat::UnshardedParam);
        st.resident = keep;
        // The trainer's own re-gathers (SimUnit::extra_fwd_gathers), as measured whatever the
        // plan: the compute stream waits for each, its buffer lives until it is done.
        for (int k = 0; k < u.extra_fwd_gathers && u.ag_bytes > 0; ++k) {
          const TimeNs a = op(Lane::Nccl, OpKind::AllGather, Phase::Forward, e, lane_[0], u.ag_ns, u.ag_bytes);
          mem(a, u.ag_bytes, e, MemCat::AllGatherBuffer);
          lane_[0] = std::max(lane_[0], a + u.ag_ns);
          mem(lane_[0], -u.ag_bytes, e, MemCat::AllGatherBuffer);
        }
        // Its later calls (SimUnit::repeat_fwd_calls) gather it again while it reshards after
        // forward. FSDP2 issues each ahead of the call's compute, which does not wait here: the
        // segment's compute is every call's, and the gathers take their turn on the stream.
        if (u.reshard != kKeepUnsharded) regather(e, u.repeat_fwd_calls, Phase::Forward);
      }
    }
    if (prev_unit >= 0) free_ag_buffer(prev_unit, lane_[0]);
    free_unused_shards();
  }

  // n more all-gathers of unit e from now, in the background: each one's buffer lives while it runs.
  void regather(int e, int n, Phase ph) {
    const ExecUnit& u = eu(e);
    for (int k = 0; k < n && u.ag_bytes > 0; ++k) {
      const TimeNs a = op(Lane::Nccl, OpKind::AllGather, ph, e, lane_[0], u.ag_ns, u.ag_bytes);
      mem(a, u.ag_bytes, e, MemCat::AllGatherBuffer);
      mem(a + u.ag_ns, -u.ag_bytes, e, MemCat::AllGatherBuffer);
    }
  }

  // What unit e's hook prefetches in this pass (its explicit list, or the next unit in the pass's
  // order), each all-gather ready at `ready` unless issued already or not needed.
  void prefetch(int e, TimeNs ready, Phase ph) {
    const ExecUnit& u = eu(e);
    const bool fwd = ph == Phase::Forward;
    if (fwd ? u.has_fwd_list : u.has_bwd_list) {
      for (int v : fwd ? u.fwd_prefetch : u.bwd_prefetch)
        if (!unit_[static_cast<std::size_t>(v)].issued && needs_gather(v)) all_gather(v, ready, ph);
      return;
    }
    int next = next_in(fwd ? s_.fwd_order : s_.bwd_order, e);
    while (!fwd && next >= 0 && chain_ >= backward_calls(next)) next = next_in(s_.bwd_order, next);  // not in this chain
    if (next >= 0 && !unit_[static_cast<std::size_t>(next)].issued && needs_gather(next)) all_gather(next, ready, ph);
  }

  // Backward passes through unit e in a pass: 1 + SimUnit::extra_bwd_gathers (a frozen unit: none
  // of its own, its segments' compute once).
  int backward_calls(int e) const { return eu(e).frozen ? 1 : 1 + eu(e).extra_bwd_gathers; }

  // The forward all-gather buffer a unit still holds, freed at time t.
  void free_ag_buffer(int e, TimeNs t) {
    UnitState& st = unit_[static_cast<std::size_t>(e)];
    if (st.ag_buffer > 0) mem(t, -st.ag_buffer, e, MemCat::AllGatherBuffer);
    st.ag_buffer = 0;
  }

  static int next_in(const std::vector<int>& order, int e) {
    for (std::size_t i = 0; i + 1 < order.size(); ++i)
      if (order[i] == e) return order[i + 1];
    return -1;
  }

  void backward(bool last_micro) {
    for (auto& st : unit_) st.issued = st.h2d = false;
    const bool sync = s_.sync_every_microbatch || last_micro;
    const Lane rs_lane = s_.separate_rs ? Lane::ReduceScatter : Lane::Nccl;
    TimeNs last_rs_end = 0, last_ar_end = 0;
    std::int64_t held_rs = 0;  // the last reduce-scatter's input
    int held_rs_unit = -1;
    // Backward all-gathers are issued once the forward is done on the GPU. (The CPU may run
    // further ahead; this keeps the model from holding a unit's parameters twice at the
    // forward/backward turn, and makes the last unit's re-gather exposed, as observed in practice.)
    const TimeNs issue = lane_[0];
    if (s_.other_backward_bytes != 0) mem(issue, s_.other_backward_bytes, -1, MemCat::Other);
    // zero_grad() right before the first backward: the step's sharded gradients are made again by
    // the reduce-scatters (SimModel::grads_freed_before_backward).
    if (s_.grads_freed_before_backward && micro_ == 0)
      for (std::size_t e = 0; e < unit_.size(); ++e)
        if (unit_[e].sharded_grad) {
          mem(issue, -grad_bytes(e), static_cast<int>(e), MemCat::ShardedGrad);
          unit_[e].sharded_grad = false;
        }
    // A model called on two inputs before one backward is gone through twice, last call first:
    // every unit's backward for the second call, then every unit's for the first (autograd's
    // order). Chain c runs the units with more than c backwards (1 + SimUnit::extra_bwd_gathers),
    // each with its share of the unit's compute and activations; the post-backward after each
    // chain reshards the unit, so a later chain gathers it again (kept unsharded or not), and
    // only the last reduces: its gradients from the earlier chains wait in autograd till then.
    int chains = 1;
    for (const auto& u : s_.units) chains = std::max(chains, 1 + u.extra_bwd_gathers);
    // Unsharded gradients carried from earlier passes that did not reduce (no_sync accumulation):
    // a unit gone through by several chains reduces them at its first post-backward of the
    // reducing pass, and this pass's at its last (autograd accumulates a parameter used twice once
    // both chains are done, so the first finds only the carried ones: a two-forward loop with
    // no_sync, 9 reduce-scatters a step, replayed 5).
    std::vector<char> carried(unit_.size(), 0);
    for (std::size_t e = 0; e < unit_.size(); ++e) carried[e] = unit_[e].grads_held;
    for (chain_ = 0; chain_ < chains; ++chain_) {
      if (chain_ > 0)  // a frozen unit's prefetch waits for the root's callback: gathered once
        for (std::size_t e = 0; e < unit_.size(); ++e)
          if (!s_.units[e].frozen_in_trained_model) unit_[e].issued = unit_[e].h2d = false;
      const TimeNs chain_issue = chain_ == 0 ? issue : lane_[0];
      for (std::size_t i = s_.segments.size(); i-- > 0;) {
        const ExecSegment& sg = s_.segments[i];
        const int e = sg.exec;
        UnitState& st = unit_[static_cast<std::size_t>(e)];
        const ExecUnit& u = eu(e);
        const int calls = backward_calls(e);
        if (chain_ >= calls) continue;
        const bool last_chain = chain_ == calls - 1;
        // This chain's share of what the segment does in backward (the remainder in the last).
        auto share = [&](auto whole) { return whole / calls + (last_chain ? whole % calls : 0); };
        // The loss's backward runs first, outside every module, and frees what the loss saved.
        const std::int64_t loss_saved = chain_ == 0 ? std::min(sg.loss_saved_bytes, sg.saved_bytes) : 0;
        mem(lane_[0], -loss_saved, e, MemCat::Activation);
        // A frozen unit has no pre- or post-backward (its segments' backward compute, the root's
        // loss and head, still runs).
        if (static_cast<int>(i) == u.last_seg && !u.frozen) {  // pre_backward(u): unshard, wait (copy-out), then prefetch
          const bool gathered = needs_gather(e);
          if (gathered && !st.issued) all_gather(e, chain_issue, Phase::Backward);
          if (gathered) {
            const TimeNs t = op(Lane::Compute, OpKind::CopyOut, Phase::Backward, e, st.ag_end, u.copyout_ns + u.bwd_host_ns, u.ag_bytes);
            mem(t, u.ag_bytes - st.resident, e, MemCat::UnshardedParam);
            const std::int64_t buf = u.reshard == kReshard ? u.ag_bytes : u.ag_bytes - st.resident;
            mem(lane_[0], -buf, e, MemCat::AllGatherBuffer);  // backward frees the buffer after copy-out
            st.resident = u.ag_bytes;
          }
          // FSDPParamGroup.pre_backward prefetches after its wait_for_unshard, which in backward
          // frees this unit's buffer and orders both all-gather streams after its copy-out event:
          // the next unit's buffer is made once this copy-out is done, never beside it (the 4-rank
          // MoE trace of docs/accuracy.md; issued first, the model held two gathered blocks at every
          // turn).
          prefetch(e, std::max(chain_issue, lane_[0]), Phase::Backward);
        }
        // Activation checkpointing: the forward reruns first and rebuilds what was not saved.
        if (sg.recompute_ns > 0) {
          const TimeNs r = op(Lane::Compute, OpKind::Recompute, Phase::Backward, e, 0, share(sg.recompute_ns), 0);
          mem(r, sg.recompute_bytes, e, MemCat::Activation);
          // A full rerun of the forward issues its model-parallel collectives again (Megatron);
          // selective checkpointing reruns part of the unit, whose share is not known here.
          if (eu(e).checkpoint == Checkpoint::Full) model_parallel(sg, e, Phase::Backward, r, /*rerun=*/true);
        } else if (sg.recompute_bytes > 0) {
          // A description checkpointed in its own file ("activation_checkpointing": "full") folds
          // the rerun into bwd_ns; the rerun still issues the forward's collectives, as above.
          model_parallel(sg, e, Phase::Backward, lane_[0], /*rerun=*/true);
        }
        const TimeNs t = op(Lane::Compute, OpKind::Compute, Phase::Backward, e, 0, share(sg.bwd_ns), 0);
        model_parallel(sg, e, Phase::Backward, t);
        if (sg.recompute_ns <= 0) mem(t, sg.recompute_bytes, e, MemCat::Activation);
        transient(t, sg.bwd_temp_bytes + incoming_gradient(i), e);
        measured(Phase::Backward, e, share(sg.bwd_other_ns), share(sg.bwd_idle_ns));
        // The unit's unsharded gradients (param dtype, its size) exist once its first backward
        // compute is done: autograd makes them while it frees the activations, and they go into the
        // reduce-scatter input at the post-backward. (Allocated at the pre-backward, they stacked on
        // every activation and temporary of the unit: mlp's checkpointed layer peaks mid-backward
        // with half of them, docs/accuracy.md.) Written when freed, so that gradients copied into the
        // reduce-scatter input at the very instant they were made never count.
        if (static_cast<int>(i) == u.last_seg && !st.grads_held && !u.frozen) {
          st.grads_held = st.making = true;
          st.grads_at = lane_[0];
          st.grads_written = false;
          st.grads_made.clear();
        }
        if (st.making && sg.grad_share > 0) st.grads_made.emplace_back(lane_[0], sg.grad_share);
        if (static_cast<int>(i) == u.first_seg) st.making = false;
        const std::int64_t held = sg.caller_held_bytes + sg.backward_held_bytes;
        const std::int64_t freed = sg.saved_bytes - std::min(sg.loss_saved_bytes, sg.saved_bytes) - held - input_counted_before(i);
        mem(lane_[0], -sg.recompute_bytes - share(freed), e, MemCat::Activation);
        if (last_chain && held > 0) {
          caller_held_ += sg.caller_held_bytes, caller_held_exec_ = e;
          backward_held_ += sg.backward_held_bytes;
        }
        if (static_cast<int>(i) == u.first_seg && !u.frozen) {  // post_backward(u)
          if (!s_.hold_params_until_last_backward || last_micro) {  // reshard after backward
            mem(lane_[0], -st.resident, e, MemCat::UnshardedParam);
            st.resident = 0;
          }
          // The unit's unsharded gradients: of its trainable parameters (a LoRA unit's adapter).
          const std::int64_t unsharded_grads = u.reduced * s_.param_bytes;
          const bool reduces = last_chain || (chain_ == 0 && carried[static_cast<std::size_t>(e)]);
          if (sync && u.reduced > 0 && reduces) {  // a unit without parameters (or none trained, or none on its mesh) has nothing to reduce
            // The compute stream waits for the previous reduce-scatter, then copies the grads in.
            const std::int64_t rs_in = u.reduced * s_.reduce_bytes;
            const TimeNs c0 = op(Lane::Compute, OpKind::RsCopyIn, Phase::Backward, e, last_rs_end, u.rs_copyin_ns, rs_in);
            if (held_rs > 0) mem(c0, -held_rs, held_rs_unit, MemCat::ReduceScatterBuffer);
            mem(c0, rs_in, e, MemCat::ReduceScatterBuffer);
            if (st.grads_written) {
              mem(lane_[0], -unsharded_grads, e, MemCat::UnshardedGrad);
            } else {
              mem(lane_[0], -write_grads(e, unsharded_grads, lane_[0]), e, MemCat::UnshardedGrad);
            }
            st.grads_held = false;
            const std::int64_t later_rs = u.later_rs_ns > 0 ? u.later_rs_bytes : 0;
            if (u.rs_split_ns.empty()) {
              last_rs_end = op(rs_lane, OpKind::ReduceScatter, Phase::Backward, e, lane_[0], u.rs_ns - u.later_rs_ns, rs_in - later_rs) +
                            u.rs_ns - u.later_rs_ns;
            } else {  // reduced in parts, one after another (SimUnit::reduce_split)
              last_rs_end = lane_[0];
              for (std::size_t k = 0; k < u.rs_split_ns.size(); ++k)
                last_rs_end = op(rs_lane, OpKind::ReduceScatter, Phase::Backward, e, last_rs_end, u.rs_split_ns[k],
                                 static_cast<std::int64_t>(std::llround(u.rs_split[k] * double(rs_in)))) + u.rs_split_ns[k];
            }
            if (u.later_rs_ns > 0) {  // the groups on a mesh of their own, right after
              last_rs_end = op(rs_lane, OpKind::ReduceScatter, Phase::Backward, e, last_rs_end, u.later_rs_ns, later_rs) + u.later_rs_ns;
              r_.ops.back().apart = true;
            }
            // FSDP2 keeps the input until the next unit's post-backward (or the backward's end)
            // waits for this reduce-scatter: one buffer in flight, freed before the next is made.
            held_rs = rs_in;
            held_rs_unit = e;
            const std::int64_t g = grad_bytes(static_cast<std::size_t>(e));
            if (!st.sharded_grad) {
              mem(last_rs_end, g, e, MemCat::ShardedGrad);
              st.sharded_grad = s_.offload != Offload::Cpu;  // Cpu: the device copy goes once it is down
            }
            TimeNs reduced = last_rs_end;
            if (s_.replicate > 1) {
              const TimeNs a0 = op(Lane::AllReduce, OpKind::AllReduce, Phase::Backward, e, last_rs_end, u.ar_ns,
                                   rs_in / u.shard);
              last_ar_end = std::max(last_ar_end, a0 + u.ar_ns);
              reduced = a0 + u.ar_ns;
            }
            host_after_reduce(e, reduced, last_micro);
          }
          if (st.grads_held && !st.grads_written) {  // kept for the next micro-batch (no sync) or chain
            write_grads(e, unsharded_grads, std::numeric_limits<TimeNs>::max());
            st.grads_written = true;
          }
        }
      }
    }
    chain_ = 0;
    // End of backward: the root waits for every reduce-scatter (and HSDP all-reduce).
    lane_[0] = std::max({lane_[0], last_rs_end, last_ar_end});
    if (held_rs > 0) mem(lane_[0], -held_rs, held_rs_unit, MemCat::ReduceScatterBuffer);
    if (backward_held_ > 0) mem(lane_[0], -backward_held_, caller_held_exec_, MemCat::Activation);  // `del out` after backward
    backward_held_ = 0;
    if (s_.other_backward_bytes != 0) mem(lane_[0], -s_.other_backward_bytes, -1, MemCat::Other);
    // The root's post-backward callback reshards the trained model's frozen units: the buffer of
    // a prefetch no pre-backward waited for, the parameters of one kept unsharded after forward.
    for (std::size_t e = 0; e < unit_.size(); ++e) {
      const ExecUnit& u = s_.units[e];
      UnitState& st = unit_[e];
      if (!u.frozen_in_trained_model) continue;
      if (st.issued) mem(lane_[0], -gather_buffer_bytes(u, Phase::Backward), static_cast<int>(e), MemCat::AllGatherBuffer);
      if (st.resident > 0) mem(lane_[0], -st.resident, static_cast<int>(e), MemCat::UnshardedParam);
      st.issued = false;
      st.resident = 0;
    }
    free_unused_shards();
  }

  // Offload after a unit's gradients are reduced. Cpu: the sharded gradients go down (always) and,
  // pipelined, the CPU updates the unit at once. Optimizer, pipelined: down, update, parameters up.
  void host_after_reduce(int e, TimeNs reduced, bool last_micro) {
    const ExecUnit& u = eu(e);
    const std::int64_t g = grad_bytes(static_cast<std::size_t>(e));
    if (s_.offload == Offload::Cpu) {
      const TimeNs d = op(Lane::DeviceToHost, OpKind::DeviceToHost, Phase::Backward, e, reduced, u.d2h_ns, g);
      mem(d + u.d2h_ns, -g, e, MemCat::ShardedGrad);
      d2h_end_ = std::max(d2h_end_, d + u.d2h_ns);
      if (s_.pipelined_optimizer && last_micro)
        op(Lane::CpuOptimizer, OpKind::CpuOptimizer, Phase::Optimizer, e, d + u.d2h_ns, u.cpu_opt_ns, 0);
    } else if (s_.offload == Offload::Optimizer && s_.pipelined_optimizer && last_micro) {
      const TimeNs d = op(Lane::DeviceToHost, OpKind::DeviceToHost, Phase::Backward, e, reduced, u.d2h_ns, g);
      const TimeNs c = op(Lane::CpuOptimizer, OpKind::CpuOptimizer, Phase::Optimizer, e, d + u.d2h_ns, u.cpu_opt_ns, 0);
      op(Lane::HostToDevice, OpKind::HostToDevice, Phase::Optimizer, e, c + u.cpu_opt_ns, u.h2d_ns, shard_bytes(e));
    }
  }

  const CompiledStep& s_;
  SimResult& r_;
  TimeNs d2h_end_ = 0;
  std::vector<UnitState> unit_;
  TimeNs lane_[kLaneCount] = {};
  std::vector<std::pair<TimeNs, TimeNs>> comm_[kNcclLaneCount];
  std::size_t ptr_[kNcclLaneCount] = {};
  int micro_ = 0;
  int chain_ = 0;  // the backward's chain (backward): 0 unless a unit is called more than once
  std::int64_t caller_held_ = 0;  // the previous pass's output, still in the training loop's variable
  int caller_held_exec_ = -1;
  std::int64_t backward_held_ = 0;  // the output held only through this pass's backward
};

}  // namespace

struct PassRunner::Impl {
  StepRun run;
  Impl(const CompiledStep& s, SimResult& r) : run(s, r) {}
};
PassRunner::PassRunner(const CompiledStep& s, SimResult& r) : impl_(std::make_unique<Impl>(s, r)) {}
PassRunner::~PassRunner() = default;
void PassRunner::start() { impl_->run.start(); }
void PassRunner::forward_pass(int micro) { impl_->run.forward_pass(micro); }
void PassRunner::backward_pass(int micro, bool last) { impl_->run.backward_pass(micro, last); }
void PassRunner::finish() { impl_->run.finish(); }
TimeNs PassRunner::now() const { return impl_->run.now(); }

void sweep_memory(const CompiledStep& s, SimResult& r, bool detail) {
  auto& ev = r.memory;
  // Frees before allocations at the same instant: a buffer released when another is taken
  // does not count twice.
  std::stable_sort(ev.begin(), ev.end(), [](const MemEvent& a, const MemEvent& b) {
    return a.time != b.time ? a.time < b.time : (a.delta < 0) > (b.delta < 0);
  });
  std::int64_t cur = 0, peak = -1, lo = 0;
  std::size_t peak_idx = 0;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    cur += ev[i].delta;
    lo = std::min(lo, cur);
    if (cur > peak) peak = cur, peak_idx = i;
  }
  r.peak_bytes = std::max<std::int64_t>(peak, 0);
  r.min_bytes = lo;
  if (ev.empty()) return;
  r.peak_time = ev[peak_idx].time;
  r.peak_by_category.fill(0);
  if (detail) r.unit_memory.assign(s.units.size(), {});
  std::vector<std::int64_t> own(detail ? s.units.size() : 0, 0);
  for (std::size_t i = 0; i < ev.size(); ++i) {
    const auto& m = ev[i];
    if (i <= peak_idx) r.peak_by_category[static_cast<std::size_t>(m.cat)] += m.delta;
    if (detail && m.exec >= 0) {
      auto& um = r.unit_memory[static_cast<std::size_t>(m.exec)];
      if (i <= peak_idx) um.at_peak[static_cast<std::size_t>(m.cat)] += m.delta;
      own[static_cast<std::size_t>(m.exec)] += m.delta;
      um.own_peak = std::max(um.own_peak, own[static_cast<std::size_t>(m.exec)]);
    }
  }
  // The unit computing at the peak: the last compute-lane op that started at or before it.
  for (const auto& o : r.ops) {
    if (o.lane != Lane::Compute || o.start > r.peak_time) continue;
    if (o.end >= r.peak_time || o.start == r.peak_time) {
      r.peak_exec = o.exec;
      r.peak_phase = o.phase;
    }
  }
}

SimResult simulate(const CompiledStep& step, bool detail) {
  return step.stages.empty() ? simulate_flat(step, detail) : simulate_pipeline(step, detail);
}

SimResult simulate_flat(const CompiledStep& step, bool detail) {
  SimResult r;
  StepRun run(step, r);
  run.run();
  r.exposed_comm_ns = std::max<TimeNs>(0, r.step_ns - r.compute_busy_ns - r.other_comm_ns - r.idle_ns - r.model_parallel_exposed_ns);
  sweep_memory(step, r, detail);
  return r;
}

}  // namespace ss::sim
