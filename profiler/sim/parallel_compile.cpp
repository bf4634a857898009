// Tensor, sequence, context and expert parallelism around FSDP (docs/simulator.md §parallelism):
// what one TP x CP rank computes and keeps, and the model-parallel collectives it issues.
#include <algorithm>
#include <cmath>

#include "profiler/sim/compile_internal.h"
#include "storage/errors.h"

namespace ss::sim {
namespace {

std::int64_t div_round(std::int64_t bytes, int d) { return d <= 1 ? bytes : (bytes + d / 2) / d; }
TimeNs div_round_ns(TimeNs t, int d) { return d <= 1 ? t : static_cast<TimeNs>(std::llround(double(t) / d)); }

}  // namespace

std::int64_t parallel_params(const CompiledStep& s, const SimUnit& u) {
  if (u.expert) return u.param_count / s.par.ep;
  if (s.par.tp <= 1) return u.param_count;
  const std::int64_t repl = std::clamp<std::int64_t>(u.tp_replicated_params, 0, u.param_count);
  return (u.param_count - repl) / s.par.tp + repl;
}

std::int64_t gathered_params(const CompiledStep& s, const SimUnit& u) {
  std::int64_t p = parallel_params(s, u);
  for (const auto& g : u.apart_groups) {
    if (g.ep < 1 || s.shard % g.ep != 0)
      throw ProfileError(ProfileErrorKind::MalformedTable,
                         "plan: unit '" + u.name + "': its parameters on their own mesh are split " + std::to_string(g.ep) +
                             " ways (expert parallelism as recorded), which does not divide the FSDP group of " +
                             std::to_string(s.shard) + " ranks");
    p -= g.params;
  }
  return std::max<std::int64_t>(p + apart_gathered(s, u).params, 0);
}

ApartGathered apart_gathered(const CompiledStep& s, const SimUnit& u) {
  ApartGathered a;
  for (const auto& g : u.apart_groups)
    if (g.ep >= 1 && s.shard / g.ep > 1) {  // gathered over its own mesh
      a.params += g.params / g.ep;
      if (a.mesh == 1) a.mesh = s.shard / g.ep;
    }
  return a;
}

SimSegment parallel_segment(const SimModel& m, const CompiledStep& s, const SimSegment& in) {
  const Parallelism& par = s.par;
  SimSegment sg = in;
  // Experts are not split by TP (no expert tensor parallelism); every TP x CP rank's tokens are
  // split by CP. The rest splits its heads / hidden columns by TP and its sequence by CP.
  const bool expert = m.units[static_cast<std::size_t>(in.unit)].expert;
  const int tp = expert ? 1 : par.tp, cp = par.cp;
  const int repl_div = par.sequence_parallel ? tp : 1;  // SP splits the norm inputs' sequence too
  auto act = [&](std::int64_t bytes, std::int64_t replicated) {
    replicated = std::clamp<std::int64_t>(replicated, 0, bytes);
    return div_round(div_round(bytes - replicated, tp) + div_round(replicated, repl_div), cp);
  };
  const std::int64_t repl = in.parallel.tp_replicated_saved;
  sg.fwd_ns = div_round_ns(in.fwd_ns, tp * cp);
  sg.bwd_ns = div_round_ns(in.bwd_ns, tp * cp);
  sg.saved_activation_bytes = act(in.saved_activation_bytes, repl);
  // A block's input (what full checkpointing keeps, what a pipeline stage sends) is replicated
  // over the TP group unless sequence parallelism splits it.
  sg.input_bytes = act(in.input_bytes, in.input_bytes);
  sg.recompute_activation_bytes = act(in.recompute_activation_bytes, 0);
  sg.fwd_temp_bytes = act(in.fwd_temp_bytes, 0);
  sg.bwd_temp_bytes = act(in.bwd_temp_bytes, 0);
  const double ratio = in.saved_activation_bytes > 0 ? double(sg.saved_activation_bytes) / double(in.saved_activation_bytes) : 0;
  for (auto& p : sg.parts) {
    p.fwd_ns = div_round_ns(p.fwd_ns, tp * cp);
    p.saved_bytes = static_cast<std::int64_t>(std::llround(double(p.saved_bytes) * ratio));
  }
  sg.parallel.attention_core_ns = div_round_ns(in.parallel.attention_core_ns, tp * cp);
  return sg;
}

void parallel_comm(const CompiledStep& s, const SimSegment& sg, const ClusterModel& c, ExecSegment& es) {
  const Parallelism& par = s.par;
  const ParallelShape& sh = sg.parallel;
  const int g = s.gpus_per_node;
  // Placement: tp innermost (inside a node when it fits), then cp, then dp; so a CP or EP group's
  // ranks are tp apart.
  const int tp_per_node = std::min(par.tp, g);
  const int strided_per_node = std::max(1, g / par.tp);
  es.mp_ops.clear();
  if (par.tp > 1 && sh.tp_pairs + sh.tp_fwd_only + sh.tp_bwd_only + sh.sp_norms > 0) {
    // One collective per column -> row pair on the local tokens' activations (tokens / cp).
    const std::int64_t b = sh.tp_bytes / par.cp;
    const TimeNs ar = c.collective_ns(Coll::AllReduce, b, par.tp, tp_per_node);
    const TimeNs ag = c.collective_ns(Coll::AllGather, b, par.tp, tp_per_node);
    const TimeNs rs = c.collective_ns(Coll::ReduceScatter, b, par.tp, tp_per_node);
    if (par.sequence_parallel) {
      // SP: all-gather before the column-parallel matmul, reduce-scatter after the row-parallel one.
      for (int i = 0; i < sh.tp_pairs; ++i) {
        es.mp_ops.push_back({OpKind::TpAllGather, ag, b, OpKind::TpReduceScatter, rs});
        es.mp_ops.push_back({OpKind::TpReduceScatter, rs, b, OpKind::TpAllGather, ag});
      }
    } else {
      for (int i = 0; i < sh.tp_pairs; ++i) es.mp_ops.push_back({OpKind::TpAllReduce, ar, b, OpKind::TpAllReduce, ar});
    }
    // The embedding (forward all-reduce) and the output head (backward all-reduce); with SP a
    // reduce-scatter into sequence shards and its all-gather adjoint (embedding), an all-gather of
    // the head's input and its reduce-scatter adjoint (head).
    for (int i = 0; i < sh.tp_fwd_only; ++i)
      es.mp_ops.push_back(par.sequence_parallel ? ParallelOp{OpKind::TpReduceScatter, rs, b, OpKind::TpAllGather, ag}
                                                : ParallelOp{OpKind::TpAllReduce, ar, b, OpKind::TpAllReduce, ar, true, false});
    for (int i = 0; i < sh.tp_bwd_only; ++i)
      es.mp_ops.push_back(par.sequence_parallel ? ParallelOp{OpKind::TpAllGather, ag, b, OpKind::TpReduceScatter, rs}
                                                : ParallelOp{OpKind::TpAllReduce, ar, b, OpKind::TpAllReduce, ar, false, true});
    if (sh.tp_bwd_only > 0 && (sh.logits_bytes > 0 || sh.loss_stat_bytes > 0)) {
      if (par.loss_parallel) {
        const std::int64_t stat = sh.loss_stat_bytes / par.cp;
        const TimeNs t = c.collective_ns(Coll::AllReduce, stat, par.tp, tp_per_node);
        for (int i = 0; i < 3; ++i) es.mp_ops.push_back({OpKind::TpAllReduce, t, stat, OpKind::TpAllReduce, t, true, false});
      } else {
        const std::int64_t lg = sh.logits_bytes / par.cp;
        const TimeNs t = c.collective_ns(Coll::AllGather, lg, par.tp, tp_per_node);
        es.mp_ops.push_back({OpKind::TpAllGather, t, lg, OpKind::TpAllGather, t, true, false});
      }
    }
    if (par.sequence_parallel && sh.sp_norms > 0) {
      const TimeNs t = c.collective_ns(Coll::AllReduce, sh.norm_grad_bytes, par.tp, tp_per_node);
      for (int i = 0; i < sh.sp_norms; ++i)
        es.mp_ops.push_back({OpKind::TpAllReduce, t, sh.norm_grad_bytes, OpKind::TpAllReduce, t, false, true});
    }
  }
  if (par.cp > 1 && sh.attentions > 0) {
    const int local = par.tp * par.cp;  // q, k, v are split by heads (TP) and sequence (CP)
    if (par.cp_kind == "ulysses") {
      // Ulysses: sequence-sharded q/k/v to head-sharded before attention, the output back after.
      const std::int64_t qkv = sh.cp_qkv_bytes / local, out = sh.cp_out_bytes / local;
      const TimeNs tq = c.all_to_all_ns(qkv, par.cp, strided_per_node), to = c.all_to_all_ns(out, par.cp, strided_per_node);
      for (int a = 0; a < sh.attentions; ++a) {
        es.mp_ops.push_back({OpKind::CpAllToAll, tq, qkv, OpKind::CpAllToAll, tq});
        es.mp_ops.push_back({OpKind::CpAllToAll, to, out, OpKind::CpAllToAll, to});
      }
    } else {
      // Ring: cp - 1 K/V chunk exchanges per attention, overlapped with the score work; the
      // backward passes K/V and their gradients (twice the bytes) over twice the work.
      const bool cross = par.tp * par.cp > g;
      es.ring_attentions = sh.attentions;
      es.ring_steps = par.cp - 1;
      es.ring_step_bytes = sh.cp_kv_bytes / local;
      const TimeNs step = c.p2p_ns(es.ring_step_bytes, cross);
      es.ring_fwd_ns = TimeNs(es.ring_steps) * step;
      es.ring_bwd_ns = TimeNs(es.ring_steps) * c.p2p_ns(2 * es.ring_step_bytes, cross);
      const TimeNs core = sh.attentions > 0 ? sg.parallel.attention_core_ns / sh.attentions : 0;
      es.ring_core_fwd_ns = core;
      es.ring_core_bwd_ns = 2 * core;
    }
  }
  if (par.ep > 1 && sh.moe_layers > 0) {
    // Dispatch routed tokens to their experts' ranks and combine the outputs back.
    const std::int64_t b = sh.ep_bytes / par.cp;
    const TimeNs t = c.all_to_all_ns(b, par.ep, std::min(par.ep, strided_per_node));
    for (int l = 0; l < sh.moe_layers; ++l) {
      es.mp_ops.push_back({OpKind::EpAllToAll, t, b, OpKind::EpAllToAll, t});
      es.mp_ops.push_back({OpKind::EpAllToAll, t, b, OpKind::EpAllToAll, t});
    }
  }
}

}  // namespace ss::sim
