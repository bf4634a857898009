#include "profiler/sim/simulated_profile.h"

#include <algorithm>

#include "storage/profile_writer.h"
#include "storage/version.h"

namespace ss::sim {
namespace {

MemoryCategory to_profile(MemCat c) {
  switch (c) {
    case MemCat::ShardedParam: return MemoryCategory::ShardedParameter;
    case MemCat::UnshardedParam: return MemoryCategory::UnshardedParameter;
    case MemCat::ShardedGrad:
    case MemCat::UnshardedGrad: return MemoryCategory::Gradient;
    case MemCat::OptimizerState: return MemoryCategory::OptimizerState;
    case MemCat::Activation: return MemoryCategory::Activation;
    case MemCat::AllGatherBuffer: return MemoryCategory::AllGatherBuffer;
    case MemCat::ReduceScatterBuffer: return MemoryCategory::ReduceScatterBuffer;
    case MemCat::Other: return MemoryCategory::Unknown;
    case MemCat::Temporary: return MemoryCategory::Temporary;
  }
  return MemoryCategory::Unknown;
}

}  // namespace

void write_simulated_profile(const std::string& path, const SimModel& model, const CompiledStep& step,
                             const SimResult& r, const SimulatedProfileInfo& info) {
  Origin o;
  o.kind = OriginKind::Simulated;
  o.tool = "shardscope simulate";
  o.tool_version = kShardScopeVersion;
  o.source_format = "fsdp-sim";
  o.source_files = info.source_files;
  o.parameters_json = info.parameters_json;
  o.notes = "Simulated FSDP2 step for one representative rank of " + std::to_string(step.world) + " (shard group " +
            std::to_string(step.shard) + ", replicate " + std::to_string(step.replicate) + ").";
  ProfileWriter w(path, o);
  RankInfo ri;
  ri.rank = 0;
  ri.host = "simulated";
  ri.gpu_name = info.gpu_name;
  ri.world_size = step.world;
  w.add_rank(ri);
  const char* lane_names[kLaneCount] = {"compute", "nccl (all-gather + reduce-scatter)", "nccl reduce-scatter", "nccl all-reduce (HSDP)",
                                       "host-to-device copies (offload)", "device-to-host copies (offload)", "CPU optimizer (offload)",
                                       "nccl TP / CP / EP", "nccl PP send/recv"};
  // The offload and parallelism lanes appear only when a plan uses them, so other profiles keep
  // their four streams.
  const Parallelism& par = step.par;
  RowId streams[kLaneCount];
  for (int l = 0; l < kLaneCount; ++l) {
    streams[l] = kNoRow;
    const Lane lane = static_cast<Lane>(l);
    if (l > kNcclLaneCount && lane <= Lane::CpuOptimizer && step.offload == Offload::None) continue;
    if (lane == Lane::ModelParallel && par.tp == 1 && par.cp == 1 && par.ep == 1) continue;
    if (lane == Lane::PipelineP2P && step.stages.empty()) continue;
    const StreamKind kind = l == 0 || lane == Lane::CpuOptimizer ? (l == 0 ? StreamKind::Compute : StreamKind::Unknown)
                            : l <= kNcclLaneCount || lane >= Lane::ModelParallel ? StreamKind::Nccl
                                                                                 : StreamKind::Copy;
    streams[l] = w.add_stream({0, 0, l == 0 ? 7 : 20 + l, kind, lane_names[l]});
  }
  const RowId thread = w.add_thread({0, 1, "simulated"});

  // Module tree: a root row, then one row per unit (nested under the root).
  std::vector<RowId> exec_module(step.units.size(), kNoRow);
  std::vector<RowId> unit_module(model.units.size(), kNoRow);
  int root = -1;
  for (std::size_t u = 0; u < model.units.size(); ++u)
    if (model.units[u].is_root) root = static_cast<int>(u);
  auto policy = [&](int u) {
    const int m = step.units[static_cast<std::size_t>(step.exec_of_unit[static_cast<std::size_t>(u)])].reshard;
    return m == kKeepUnsharded ? std::string("false") : m == kReshard ? std::string("true") : std::to_string(m);
  };
  RowId root_row = kNoRow;
  if (root >= 0) {
    const auto& ru = model.units[static_cast<std::size_t>(root)];
    // Like a measured profile, a module's parameter bytes cover its whole subtree.
    root_row = w.add_module({kNoRow, ru.name, ru.class_name, model.total_params(), model.total_params() * model.param_dtype_bytes,
                             true, kNoRow, policy(root)});
    unit_module[static_cast<std::size_t>(root)] = root_row;
  }
  for (std::size_t u = 0; u < model.units.size(); ++u) {
    if (static_cast<int>(u) == root) continue;
    const auto& mu = model.units[u];
    unit_module[u] = w.add_module({root_row, mu.name, mu.class_name, mu.param_count, mu.param_count * model.param_dtype_bytes,
                                   true, kNoRow, policy(static_cast<int>(u))});
  }
  for (std::size_t e = 0; e < step.units.size(); ++e)
    exec_module[e] = unit_module[static_cast<std::size_t>(step.units[e].members.front())];
  auto module_of = [&](int e) { return e >= 0 ? exec_module[static_cast<std::size_t>(e)] : kNoRow; };

  const RowId pg = w.add_process_group({"shard", "fsdp_shard", "", step.shard, "nccl"});
  const RowId rpg = step.replicate > 1 ? w.add_process_group({"replicate", "hsdp_replicate", "", step.replicate, "nccl"}) : kNoRow;
  // Parameter groups on a mesh of their own (torchtitan's experts over dp_shard / ep ranks).
  int apart_shard = 1;
  for (const auto& e : step.units) apart_shard = std::max(apart_shard, e.later_ag_bytes > 0 ? e.later_shard : 1);
  const RowId apg = apart_shard > 1 ? w.add_process_group({"efsdp", "expert_fsdp", "", apart_shard, "nccl"}) : kNoRow;
  // Model-parallel groups, as torchtitan names its mesh dimensions.
  const RowId tp_pg = par.tp > 1 ? w.add_process_group({"tp", "tensor_parallel", "", par.tp, "nccl"}) : kNoRow;
  const RowId cp_pg = par.cp > 1 ? w.add_process_group({"cp", "context_parallel", "", par.cp, "nccl"}) : kNoRow;
  const RowId ep_pg = par.ep > 1 ? w.add_process_group({"ep", "expert_parallel", "", par.ep, "nccl"}) : kNoRow;
  const RowId pp_pg = !step.stages.empty() ? w.add_process_group({"pp", "pipeline_parallel", "", par.pp, "nccl"}) : kNoRow;
  const std::uint32_t bf16 = w.intern("BFloat16");
  std::int64_t seq = 0, rseq = 0, mseq = 0, corr = 1;
  TimeNs recompute_start = -1;
  w.add_range({0, thread, kNoRow, 0, r.step_ns, w.intern("ProfilerStep#0"), RangeKind::Annotation,
                                        RangePhase::None, kNoRow, kNoRow, 0});
  for (const auto& op : r.ops) {
    if ((op.kind == OpKind::AllGather || op.kind == OpKind::ReduceScatter) && !fsdp_collective_called(step, op.exec))
      continue;
    const std::string unit = op.exec >= 0 ? step.units[static_cast<std::size_t>(op.exec)].name : std::string();
    const std::string label = unit.empty() ? std::string("root") : unit;
    const char* phase = op.phase == Phase::Forward ? "forward" : op.phase == Phase::Backward ? "backward" : "optimizer";
    std::string name;
    KernelCategory cat = KernelCategory::Compute;
    CollectiveType ct = CollectiveType::Unknown;
    switch (op.kind) {
      case OpKind::Compute: name = label + " (" + phase + ")"; break;
      case OpKind::CopyOut: name = "FSDP all-gather copy-out (" + label + ")"; cat = KernelCategory::Memcpy; break;
      case OpKind::RsCopyIn: name = "FSDP reduce-scatter copy-in (" + label + ")"; cat = KernelCategory::Memcpy; break;
      case OpKind::Optimizer: name = "Optimizer.step"; break;
      case OpKind::AllGather: name = "ncclDevKernel_AllGather (" + label + ")"; cat = KernelCategory::Collective; ct = CollectiveType::AllGather; break;
      case OpKind::ReduceScatter: name = "ncclDevKernel_ReduceScatter (" + label + ")"; cat = KernelCategory::Collective; ct = CollectiveType::ReduceScatter; break;
      case OpKind::AllReduce: name = "ncclDevKernel_AllReduce (" + label + ")"; cat = KernelCategory::Collective; ct = CollectiveType::AllReduce; break;
      case OpKind::OtherComm:  // the measured non-FSDP collectives, merged into one span
        name = "measured collectives, not FSDP (" + label + ")";
        cat = KernelCategory::Collective;
        break;
      case OpKind::Idle: continue;  // measured idle stays a gap on the timeline
      case OpKind::Recompute: name = "recompute " + label + " (activation checkpointing)"; break;
      case OpKind::HostToDevice: name = "Memcpy HtoD offload (" + label + ")"; cat = KernelCategory::Memcpy; break;
      case OpKind::DeviceToHost: name = "Memcpy DtoH offload (" + label + ")"; cat = KernelCategory::Memcpy; break;
      case OpKind::CpuOptimizer: name = "CPU optimizer step (" + label + ")"; break;
      case OpKind::TpAllReduce: name = "ncclDevKernel_AllReduce TP (" + label + ")"; cat = KernelCategory::Collective; ct = CollectiveType::AllReduce; break;
      case OpKind::TpAllGather: name = "ncclDevKernel_AllGather SP (" + label + ")"; cat = KernelCategory::Collective; ct = CollectiveType::AllGather; break;
      case OpKind::TpReduceScatter: name = "ncclDevKernel_ReduceScatter SP (" + label + ")"; cat = KernelCategory::Collective; ct = CollectiveType::ReduceScatter; break;
      case OpKind::CpAllToAll: name = "ncclDevKernel_AllToAll CP Ulysses (" + label + ")"; cat = KernelCategory::Collective; ct = CollectiveType::AllToAll; break;
      case OpKind::CpRing: name = "ncclDevKernel_SendRecv CP ring (" + label + ")"; cat = KernelCategory::Collective; ct = CollectiveType::SendRecv; break;
      case OpKind::EpAllToAll: name = "ncclDevKernel_AllToAll EP (" + label + ")"; cat = KernelCategory::Collective; ct = CollectiveType::AllToAll; break;
      case OpKind::PpSend: name = std::string("ncclDevKernel_SendRecv PP ") + (op.phase == Phase::Forward ? "activation" : "gradient") +
                                  " (micro-batch " + std::to_string(op.micro) + ")";
        cat = KernelCategory::Collective; ct = CollectiveType::SendRecv; break;
    }
    KernelRow k;
    k.rank = 0;
    k.stream = streams[static_cast<int>(op.lane)];
    k.start = op.start;
    k.end = op.end;
    k.name = w.intern(name);
    k.correlation = corr++;
    k.category = cat;
    k.module = module_of(op.exec);
    k.bytes = cat == KernelCategory::Memcpy ? op.bytes : 0;
    const RowId kid = w.add_kernel(k);
    if (op.kind == OpKind::OtherComm) {
      w.add_collective({0, kid, CollectiveType::Unknown, 0, 0, kNoRow, 0, -1, op.start, op.end});
    } else if (is_model_parallel(op.kind) || op.kind == OpKind::PpSend) {
      const bool tp = op.kind <= OpKind::TpReduceScatter, cp = op.kind == OpKind::CpAllToAll || op.kind == OpKind::CpRing;
      const RowId g = op.kind == OpKind::PpSend ? pp_pg : tp ? tp_pg : cp ? cp_pg : ep_pg;
      const int n = op.kind == OpKind::PpSend ? 2 : tp ? par.tp : cp ? par.cp : par.ep;
      w.add_collective({0, kid, ct, op.bytes, bf16, g, n, mseq++, op.start, op.end});
    } else if (cat == KernelCategory::Collective) {
      const bool ar = ct == CollectiveType::AllReduce;
      const RowId group = ar ? rpg : op.apart ? apg : pg;
      const int size = ar ? step.replicate : op.apart ? step.units[static_cast<std::size_t>(op.exec)].later_shard : step.shard;
      w.add_collective({0, kid, ct, op.bytes, bf16, group, size, ar ? rseq++ : seq++, op.start, op.end});
    }
    if (op.kind == OpKind::Recompute || op.kind == OpKind::CpuOptimizer) {
      // Own ranges so the timeline names them: the rerun under the unit's backward (ss:rcp, as the
      // hooks record it) and the host optimizer on its lane.
      const bool rcp = op.kind == OpKind::Recompute;
      w.add_range({0, kNoRow, streams[static_cast<int>(op.lane)], op.start, op.end,
                   w.intern(rcp ? "ss:rcp:" + unit : "Optimizer.step (CPU offload)"), RangeKind::Annotation,
                   rcp ? RangePhase::Backward : RangePhase::Optimizer, module_of(op.exec), kNoRow, 0});
    }
    if (op.kind == OpKind::Recompute) recompute_start = op.start;
    if (op.kind == OpKind::Compute || op.kind == OpKind::Optimizer) {
      // A unit's backward range covers its recompute too, as a recorded one does (autograd reruns
      // the checkpointed forward inside the unit's backward).
      const TimeNs start = op.kind == OpKind::Compute && op.phase == Phase::Backward && recompute_start >= 0 ? recompute_start : op.start;
      recompute_start = -1;
      RangeRow rr{0, kNoRow, streams[0], start, op.end, w.intern(op.kind == OpKind::Optimizer ? "Optimizer.step" : label + " (" + phase + ")"),
                  op.kind == OpKind::Optimizer ? RangeKind::Annotation : RangeKind::Module,
                  op.kind == OpKind::Optimizer ? RangePhase::Optimizer : op.phase == Phase::Forward ? RangePhase::Forward : RangePhase::Backward,
                  module_of(op.exec), kNoRow, 0};
      w.add_range(rr);
    }
  }
  std::int64_t address = 0x7f0000000000;
  for (const auto& m : r.memory) {
    w.add_memory_event({0, m.time, address, m.delta, to_profile(m.cat), module_of(m.exec), streams[0]});
    if (m.delta > 0) address += m.delta;
  }
  w.add_step({0, 0, 0, r.step_ns});
  w.finish();
}

}  // namespace ss::sim
