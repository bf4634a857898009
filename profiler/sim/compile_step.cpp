// Resolving a model, a plan and a cluster into a CompiledStep (buckets, modes, costs, orders).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "profiler/sim/compile_internal.h"
#include "profiler/sim/step_simulator.h"
#include "storage/errors.h"

namespace ss::sim {
namespace {

[[noreturn]] void plan_error(const std::string& what) {
  throw ProfileError(ProfileErrorKind::MalformedTable, "plan: " + what);
}

int unit_index(const SimModel& m, const std::string& name, const char* field) {
  int i = m.find_unit(name);
  if (i < 0) {
    std::string known;
    for (std::size_t k = 0; k < m.units.size() && k < 6; ++k)
      known += (k ? ", '" : "'") + m.units[k].name + "'";
    if (m.units.size() > 6) known += ", ...";
    plan_error(std::string(field) + ": '" + name + "' is not an FSDP unit of the model (units: " + known + ")");
  }
  return i;
}

// Where each exec unit's unsharded gradients are made (ExecSegment::grad_share): autograd makes a
// parameter's gradient in the backward of the module that holds it. A bucket's member makes its
// own at the end of its backward, its earlier members' come later. (Written all at the end of the
// first member's backward, the rest of the bucket's backward held them all: the CPU llama's bucket
// of layers.2 and layers.3 started layers.2's backward with 6,328,320 B of gradients where the
// recorded job had made layers.3's 3,164,160 B.) A member called more than once makes them in the
// backward of its last call. A root split into head and tail makes its tail's
// (SimUnit::tail_params) in the output head's backward and the rest, the embedding's, at the very
// end; a tail without parameters of its own (tied embeddings) still makes the shared weight's
// gradient in the output head's backward.
void assign_grad_shares(const SimModel& m, CompiledStep& s) {
  for (const ExecUnit& e : s.units) {
    if (e.first_seg < 0) continue;
    if (e.members.size() == 1) {
      const SimUnit& only = m.units[static_cast<std::size_t>(e.members.front())];
      if (only.is_root && only.tail_params > 0 && only.param_count > 0) {
        const double tail = std::clamp(double(only.tail_params) / double(only.param_count), 0.0, 1.0);
        s.segments[static_cast<std::size_t>(e.last_seg)].grad_share += tail;
        s.segments[static_cast<std::size_t>(e.first_seg)].grad_share += 1.0 - tail;
      } else {
        s.segments[static_cast<std::size_t>(e.last_seg)].grad_share = 1.0;
      }
      continue;
    }
    for (int u : e.members) {
      int last = -1;
      for (int i = e.first_seg; i <= e.last_seg; ++i)
        if (m.segments[static_cast<std::size_t>(i)].unit == u) last = i;
      if (last < 0) continue;  // no compute: its weight goes to the members that have some
      const SimUnit& su = m.units[static_cast<std::size_t>(u)];
      s.segments[static_cast<std::size_t>(last)].grad_share += double(gathered_params(s, su)) * su.trainable_fraction();
    }
  }
}

}  // namespace

void compute_unit_costs(const CompiledStep& s, ExecUnit& e, const ClusterModel& c, double hbm_bytes_per_ns) {
  // TP is innermost: an FSDP group's ranks are tp apart, so fewer of them share a node.
  const int tp = s.inner_ranks();
  const int fsdp_per_node = std::max(1, s.gpus_per_node / tp);
  e.ag_ns = c.collective_ns(Coll::AllGather, e.ag_bytes, e.shard, fsdp_per_node);
  e.rs_ns = c.collective_ns(Coll::ReduceScatter, e.reduced * s.reduce_bytes, e.shard, fsdp_per_node);
  if (e.later_ag_bytes > 0 && e.later_shard > 1) {
    // Two collectives each way: the unit's own over its group, then its apart groups' over theirs.
    const int later_per_node = std::min(fsdp_per_node, e.later_shard);
    e.later_ag_ns = c.collective_ns(Coll::AllGather, e.later_ag_bytes, e.later_shard, later_per_node);
    e.later_rs_ns = c.collective_ns(Coll::ReduceScatter, e.later_rs_bytes, e.later_shard, later_per_node);
    e.ag_ns = c.collective_ns(Coll::AllGather, e.ag_bytes - e.later_ag_bytes, e.shard, fsdp_per_node) + e.later_ag_ns;
    e.rs_ns = c.collective_ns(Coll::ReduceScatter, std::max<std::int64_t>(0, e.reduced * s.reduce_bytes - e.later_rs_bytes), e.shard, fsdp_per_node) +
              e.later_rs_ns;
  }
  e.rs_split_ns.clear();
  if (e.rs_split.size() > 1 && e.later_rs_ns == 0) {
    e.rs_ns = 0;
    for (double share : e.rs_split) {
      const auto bytes = static_cast<std::int64_t>(std::llround(share * double(e.reduced * s.reduce_bytes)));
      e.rs_split_ns.push_back(c.collective_ns(Coll::ReduceScatter, bytes, e.shard, fsdp_per_node));
      e.rs_ns += e.rs_split_ns.back();
    }
  }
  // HSDP replicate groups take one rank from each shard group: ranks `tp x shard` apart.
  const int stride = tp * s.shard;
  const int per_node = stride >= s.gpus_per_node ? 1 : std::max(1, s.gpus_per_node / stride);
  e.ar_ns = s.replicate > 1 ? c.collective_ns(Coll::AllReduce, e.reduced * s.reduce_bytes / e.shard, s.replicate, per_node) : 0;
  if (hbm_bytes_per_ns > 0) {
    // Copy-out reads the gathered buffer and writes the unsharded parameters; the RS copy-in reads
    // the unsharded gradients and writes the (wider) reduce buffer.
    e.copyout_ns = static_cast<TimeNs>(std::llround(2.0 * double(e.ag_bytes) / hbm_bytes_per_ns));
    e.rs_copyin_ns = static_cast<TimeNs>(
        std::llround(double(e.reduced) * (s.param_bytes + s.reduce_bytes) / hbm_bytes_per_ns));
  }
}

namespace {

// Non-FSDP collectives were measured at model.other_comm_world ranks. At another world size their
// exposed time is scaled by the cluster model's ring cost of their mean size at the new and the
// measured world (all-gather shape: an all-to-all, like an all-gather, moves (n-1)/n of its buffer
// per rank; their group is assumed to grow with the job). Without sizes (other_comm_world 0: nsys
// exports carry none) or at the measured world size, the measured time is replayed unchanged.
TimeNs other_comm_at(const MeasuredExtra& x, int measured_world, int world, const ClusterModel& c) {
  if (x.other_comm_ns <= 0 || measured_world <= 0 || world == measured_world || x.other_comm_count <= 0 || x.other_comm_bytes <= 0)
    return x.other_comm_ns;
  const std::int64_t mean = x.other_comm_bytes / x.other_comm_count;
  const double then = double(c.collective_ns(Coll::AllGather, mean, measured_world));
  const double now = double(c.collective_ns(Coll::AllGather, mean, world));
  if (then <= 0) return x.other_comm_ns;
  return static_cast<TimeNs>(std::llround(double(x.other_comm_ns) * now / then));
}

// Takes a merged member's per-unit host cost (one pass) out of its segment: from the host gaps,
// and where the host is the device (a CPU run) from the compute too; never below zero (what the
// segment did not have, it cannot save), and a segment that computed keeps 1 ns of it: its
// memory events stay in order (a compute of no time frees its activations at the instant it makes
// its temporaries, and the sweep, frees first, lost them: a CPU pair's backward peak, 0.74 MiB,
// missed in one replay of three). Returns what was taken.
TimeNs take_unit_call(TimeNs& idle, TimeNs& compute, double cost_us, bool host_is_device) {
  TimeNs left = static_cast<TimeNs>(std::llround(cost_us * 1000.0));
  const TimeNs from_idle = std::clamp<TimeNs>(left, 0, std::max<TimeNs>(0, idle));
  idle -= from_idle, left -= from_idle;
  const TimeNs from_compute = host_is_device ? std::clamp<TimeNs>(left, 0, std::max<TimeNs>(0, compute - 1)) : 0;
  compute -= from_compute;
  return from_idle + from_compute;
}

}  // namespace

bool name_matches(const std::string& pat, const std::string& name) {
  // Iterative glob with backtracking to the last '*'.
  std::size_t p = 0, n = 0, star = std::string::npos, mark = 0;
  while (n < name.size()) {
    if (p < pat.size() && (pat[p] == '?' || pat[p] == name[n])) {
      ++p, ++n;
    } else if (p < pat.size() && pat[p] == '*') {
      star = p++, mark = n;
    } else if (star != std::string::npos) {
      p = star + 1, n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pat.size() && pat[p] == '*') ++p;
  return p == pat.size();
}

void set_checkpoint(CompiledStep& s, int exec, Checkpoint mode) {
  ExecUnit& e = s.units[static_cast<std::size_t>(exec)];
  if (mode == Checkpoint::Selective && !e.can_select) mode = Checkpoint::Full;
  e.checkpoint = mode;
  for (auto& sg : s.segments) {
    if (sg.exec != exec) continue;
    const CheckpointCost& c = sg.by_mode[static_cast<int>(mode)];
    sg.saved_bytes = c.saved;
    sg.recompute_bytes = c.recompute;
    sg.recompute_ns = c.recompute_ns;
  }
}

bool checkpointable(const CompiledStep& s, int exec) {
  for (const auto& sg : s.segments)
    if (sg.exec == exec && sg.by_mode[1].saved < sg.by_mode[0].saved) return true;
  return false;
}

void set_reshard(CompiledStep& s, int exec, int mode, const ClusterModel& c) {
  ExecUnit& e = s.units[static_cast<std::size_t>(exec)];
  if (mode >= e.shard) mode = kReshard;  // a slice as large as the shard group is a full reshard
  e.reshard = mode;
  e.ag_bwd_ns = mode == kKeepUnsharded ? 0
                : mode == kReshard     ? e.ag_ns
                                       : c.collective_ns(Coll::AllGather, e.ag_bytes, mode);
}

CompiledStep compile_step(const SimModel& m, const FsdpPlan& plan, const ClusterModel& c) {
  if (m.units.empty() || m.segments.empty()) plan_error("the model has no FSDP units or no compute");
  // Byte counts are int64: 1e15 parameters x 16 bytes of state still fits with room to spare.
  for (const auto& u : m.units)
    if (u.param_count < 0 || u.param_count > 1'000'000'000'000'000LL)
      throw ProfileError(ProfileErrorKind::MalformedTable, "model: unit '" + u.name + "' has an impossible parameter count");
  CompiledStep s;
  s.world = plan.world_size > 0 ? plan.world_size : c.world_size;
  if (s.world < 1) plan_error("world size must be at least 1");
  s.par = plan.parallel;
  s.recorded_model_parallel = std::max(1, m.recorded_model_parallel);
  const Parallelism& par = s.par;
  const int model_ranks = s.inner_ranks() * par.cp * par.pp;
  if (m.recorded_model_parallel > 1 && s.world % model_ranks != 0)
    plan_error("the profile's model parallelism (" + std::to_string(m.recorded_model_parallel) +
               " ranks beside FSDP's) does not divide the world size " + std::to_string(s.world));
  if (s.world % model_ranks != 0)
    plan_error("tp x cp x pp = " + std::to_string(model_ranks) + " does not divide the world size " + std::to_string(s.world));
  s.dp = s.world / model_ranks;
  s.replicate = plan.hsdp_replicate;
  if (s.dp % s.replicate != 0)
    plan_error("hsdp_replicate " + std::to_string(s.replicate) + " does not divide the " +
               (model_ranks > 1 ? "data-parallel size " : "world size ") + std::to_string(s.dp));
  s.shard = s.dp / s.replicate * par.cp;  // FSDP shards over dp x cp (torchtitan's dp_shard_cp)
  if (!m.has_parallel_shapes && (par.tp > 1 || par.cp > 1 || par.ep > 1))
    plan_error("tensor, context and expert parallelism need a model description (--model): a profile has no layer shapes");
  if (par.ep > 1 && s.shard % par.ep != 0)
    plan_error("ep " + std::to_string(par.ep) + " must divide the FSDP group dp x cp = " + std::to_string(s.shard));
  s.micro_batches = plan.gradient_accumulation;
  s.forward_only = m.forward_only;
  s.grads_kept = m.grads_kept && plan.offload == "none";
  s.grads_freed_before_backward = s.grads_kept && m.grads_freed_before_backward;
  s.sync_every_microbatch = plan.sync_every_microbatch;
  s.hold_params_until_last_backward = !plan.reshard_after_backward;
  s.separate_rs = plan.separate_reduce_scatter_group;
  s.param_bytes = m.param_dtype_bytes;
  s.master_bytes = m.master_dtype_bytes;
  s.reduce_bytes = m.reduce_dtype_bytes;
  s.optimizer_bytes = m.optimizer_bytes_per_param;
  s.overlap_slowdown = c.overlap_slowdown;
  s.comm_serialized = c.comm_serialized;
  s.other_memory_bytes = m.other_memory_bytes;
  s.other_backward_bytes = m.other_backward_bytes;
  s.gpus_per_node = c.gpus_per_node;
  // Optimizer work is proportional to the parameters each rank owns.
  double local_fraction = 1.0;  // of the model's parameters one TP / EP rank holds
  if (!par.is_1d()) {
    double local = 0;
    // An expert rank holds 1/ep of the experts, sharded over 1/ep of the group: per rank the same.
    for (const auto& u : m.units) local += double(u.expert ? u.param_count : parallel_params(s, u));
    local_fraction = m.total_params() > 0 ? local / double(m.total_params()) : 1.0;
  }
  s.optimizer_ns = static_cast<TimeNs>(std::llround(double(m.optimizer_ns) * double(std::max(1, m.optimizer_reference_world)) /
                                                    double(s.shard) * local_fraction));
  // Mostly the optimizer's per-parameter intermediates: they scale as its work does.
  s.optimizer_temp_bytes = std::llround(double(m.optimizer_temp_bytes) * double(std::max(1, m.optimizer_reference_world)) /
                                        double(s.shard) * local_fraction);

  s.optimizer_other_ns = other_comm_at(m.optimizer_extra, m.other_comm_world, s.world, c);
  s.optimizer_idle_ns = m.optimizer_extra.idle_ns;

  // First forward segment of each model unit: the forward order used for auto-bucketing.
  const std::size_t nu = m.units.size();
  std::vector<int> first_seg(nu, -1);
  for (std::size_t i = 0; i < m.segments.size(); ++i) {
    int u = m.segments[i].unit;
    if (u < 0 || static_cast<std::size_t>(u) >= nu) plan_error("segment owned by a unit that does not exist");
    if (first_seg[static_cast<std::size_t>(u)] < 0) first_seg[static_cast<std::size_t>(u)] = static_cast<int>(i);
  }
  std::vector<int> by_order;
  for (std::size_t u = 0; u < nu; ++u)
    if (first_seg[u] >= 0) by_order.push_back(static_cast<int>(u));
  std::sort(by_order.begin(), by_order.end(), [&](int a, int b) { return first_seg[static_cast<std::size_t>(a)] < first_seg[static_cast<std::size_t>(b)]; });

  // Buckets: explicit lists first, then auto-bucketing of the remaining non-root units.
  s.exec_of_unit.assign(nu, -1);
  auto new_exec = [&](const std::vector<int>& members) {
    ExecUnit e;
    for (int u : members) {
      if (s.exec_of_unit[static_cast<std::size_t>(u)] >= 0) plan_error("buckets: '" + m.units[static_cast<std::size_t>(u)].name + "' is in two buckets");
      s.exec_of_unit[static_cast<std::size_t>(u)] = static_cast<int>(s.units.size());
      if (!e.name.empty() || !e.members.empty()) e.name += "+";
      e.name += m.units[static_cast<std::size_t>(u)].name;
      e.members.push_back(u);
      e.params += parallel_params(s, m.units[static_cast<std::size_t>(u)]);
      e.gathered += gathered_params(s, m.units[static_cast<std::size_t>(u)]);
      const double trainable = m.units[static_cast<std::size_t>(u)].trainable_fraction();
      e.trainable += std::llround(double(parallel_params(s, m.units[static_cast<std::size_t>(u)])) * trainable);
      e.reduced += std::llround(double(gathered_params(s, m.units[static_cast<std::size_t>(u)])) * trainable);
      e.bwd_host_ns += m.units[static_cast<std::size_t>(u)].bwd_unshard_host_ns;
      e.extra_fwd_gathers += m.units[static_cast<std::size_t>(u)].extra_fwd_gathers;
      // A bucket is gathered at each call of a member that is called again.
      e.repeat_fwd_calls = std::max(e.repeat_fwd_calls, m.units[static_cast<std::size_t>(u)].repeat_fwd_calls);
      e.extra_bwd_gathers = std::max(e.extra_bwd_gathers, m.units[static_cast<std::size_t>(u)].extra_bwd_gathers);
      e.frozen = (e.members.size() == 1 || e.frozen) && m.units[static_cast<std::size_t>(u)].frozen;
      e.frozen_in_trained_model = (e.members.size() == 1 || e.frozen_in_trained_model) && m.units[static_cast<std::size_t>(u)].frozen_in_trained_model;
      e.is_root = e.is_root || m.units[static_cast<std::size_t>(u)].is_root;
      e.later_groups = e.later_groups || !m.units[static_cast<std::size_t>(u)].apart_groups.empty();
      const ApartGathered apart = apart_gathered(s, m.units[static_cast<std::size_t>(u)]);
      e.later_ag_bytes += apart.params;  // parameters until scaled below
      e.later_shard = std::max(e.later_shard, apart.mesh);
    }
    if (e.members.size() == 1) {
      const SimUnit& only = m.units[static_cast<std::size_t>(e.members.front())];
      e.rs_split = only.reduce_split;
    }
    e.ag_bytes = e.gathered * s.param_bytes;
    e.later_rs_bytes = e.later_ag_bytes * s.reduce_bytes;
    e.later_ag_bytes *= s.param_bytes;
    // MoE experts are sharded over the FSDP group less the EP degree (a bucket mixing experts
    // with other modules is refused: its members would need two different groups).
    const auto experts = std::count_if(members.begin(), members.end(), [&](int u) { return m.units[static_cast<std::size_t>(u)].expert; });
    if (experts > 0 && experts < static_cast<long>(members.size()) && par.ep > 1)
      plan_error("buckets: '" + e.name + "' mixes expert and non-expert modules, which expert parallelism shards over different groups");
    e.shard = experts > 0 ? s.shard / par.ep : s.shard;
    s.units.push_back(std::move(e));
  };
  for (const auto& b : plan.buckets) {
    std::vector<int> members;
    for (const auto& n : b) members.push_back(unit_index(m, n, "buckets"));
    if (!members.empty()) new_exec(members);
  }
  if (!plan.bucket_cap_mb.empty()) {
    auto cap_of = [&](int idx) {
      auto it = plan.bucket_cap_mb.find(std::to_string(idx));
      if (it == plan.bucket_cap_mb.end()) it = plan.bucket_cap_mb.find("default");
      const double mb = it == plan.bucket_cap_mb.end() ? 2000.0 : it->second;  // inductor's default cap
      return mb * 1024.0 * 1024.0;
    };
    std::vector<int> cur;
    double cur_bytes = 0;
    int idx = 0;
    for (int u : by_order) {
      if (s.exec_of_unit[static_cast<std::size_t>(u)] >= 0 || m.units[static_cast<std::size_t>(u)].is_root) continue;
      const double b = double(m.param_bytes(u));
      if (!cur.empty() && cur_bytes + b > cap_of(idx)) {
        new_exec(cur);
        cur.clear();
        cur_bytes = 0;
        ++idx;
      }
      cur.push_back(u);
      cur_bytes += b;
    }
    if (!cur.empty()) new_exec(cur);
  }
  for (int u : by_order)
    if (s.exec_of_unit[static_cast<std::size_t>(u)] < 0) new_exec({u});
  for (std::size_t u = 0; u < nu; ++u)
    if (s.exec_of_unit[u] < 0) new_exec({static_cast<int>(u)});  // a unit without compute still owns memory
  // A bucket runs one unit's hooks, copy-in / copy-out calls and collectives for all its members:
  // every member after the first in forward order is a unit call the job no longer makes.
  std::vector<char> merged_away(nu, 0);
  for (const ExecUnit& e : s.units) {
    if (e.members.size() < 2) continue;
    const auto order = [&](int u) {  // a member without a segment runs no hooks of its own first
      const int f = first_seg[static_cast<std::size_t>(u)];
      return f < 0 ? std::numeric_limits<int>::max() : f;
    };
    const int first = *std::min_element(e.members.begin(), e.members.end(), [&](int a, int b) { return order(a) < order(b); });
    for (int u : e.members) merged_away[static_cast<std::size_t>(u)] = u != first;
  }

  // Segments and hook orders. With TP / CP each segment is scaled to one rank's share once, here;
  // the selective-checkpointing pass below reads the same scaled segments.
  std::vector<SimSegment> scaled;
  if (par.tp > 1 || par.cp > 1) {
    scaled.reserve(m.segments.size());
    for (const SimSegment& sg : m.segments) scaled.push_back(parallel_segment(m, s, sg));
  }
  const std::vector<SimSegment>& segments = scaled.empty() ? m.segments : scaled;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const SimSegment& sg = segments[i];
    const int e = s.exec_of_unit[static_cast<std::size_t>(sg.unit)];
    ExecSegment es;
    es.exec = e, es.fwd_ns = sg.fwd_ns, es.bwd_ns = sg.bwd_ns;
    es.saved_bytes = sg.saved_activation_bytes, es.recompute_bytes = sg.recompute_activation_bytes;
    es.loss_saved_bytes = std::clamp<std::int64_t>(sg.loss_saved_bytes, 0, sg.saved_activation_bytes);
    es.caller_held_bytes = std::clamp<std::int64_t>(sg.caller_held_bytes, 0, sg.saved_activation_bytes - es.loss_saved_bytes);
    es.backward_held_bytes =
        std::clamp<std::int64_t>(sg.backward_held_bytes, 0, sg.saved_activation_bytes - es.loss_saved_bytes - es.caller_held_bytes);
    // Checkpointing modes. Full: only the input stays saved; backward reruns the forward first and
    // rebuilds the rest (saved - input) transiently. A model description already checkpointed
    // (recompute bytes > 0, rerun inside bwd_ns) and the root keep their own values.
    es.by_mode[0] = {sg.saved_activation_bytes, sg.recompute_activation_bytes, 0};
    es.by_mode[1] = es.by_mode[2] = es.by_mode[0];
    if (sg.recompute_activation_bytes == 0 && !m.units[static_cast<std::size_t>(sg.unit)].is_root && sg.saved_activation_bytes > 0) {
      // (A profile's input is measured as is while its saved bytes may be scaled to its peak
      // (calibrate_transients): the input can exceed them; the unit then keeps what it saved.)
      const std::int64_t in = std::clamp<std::int64_t>(sg.input_bytes, 0, sg.saved_activation_bytes);
      // The rerun runs the forward's host code again too, not only its operators: the measured
      // gaps between them (Python, launches; on a launch-bound GPU job most of the forward).
      // CPU, recorded checkpointed B: a block's rerun range is 22.4 ms (mlp) and 10.0 ms (llama)
      // against 21.0 and 8.5 ms of operators.
      const double share = std::clamp(sg.rerun_share, 0.0, 1.0);
      const TimeNs rerun = static_cast<TimeNs>(std::llround(double(sg.fwd_ns + sg.fwd_extra.idle_ns) * share));
      es.by_mode[1] = {in, sg.saved_activation_bytes - in, rerun};
    }
    es.fwd_other_ns = other_comm_at(sg.fwd_extra, m.other_comm_world, s.world, c);
    es.bwd_other_ns = other_comm_at(sg.bwd_extra, m.other_comm_world, s.world, c);
    es.fwd_temp_bytes = sg.fwd_temp_bytes;
    es.bwd_temp_bytes = sg.bwd_temp_bytes;
    es.bwd_incoming_bytes = sg.bwd_incoming_bytes;
    es.fwd_idle_ns = sg.fwd_extra.idle_ns;  // host-bound time does not depend on the plan or the world
    es.bwd_idle_ns = sg.bwd_extra.idle_ns;
    if (!par.is_1d()) parallel_comm(s, sg, c, es);
    if (merged_away[static_cast<std::size_t>(sg.unit)] && first_seg[static_cast<std::size_t>(sg.unit)] == static_cast<int>(i))
      s.merged_host_saved_ns += take_unit_call(es.fwd_idle_ns, es.fwd_ns, c.fsdp_unit_forward_us, c.comm_serialized) +
                                take_unit_call(es.bwd_idle_ns, es.bwd_ns, c.fsdp_unit_backward_us, c.comm_serialized);
    s.segments.push_back(std::move(es));
    ExecUnit& eu = s.units[static_cast<std::size_t>(e)];
    if (eu.first_seg < 0) {
      eu.first_seg = static_cast<int>(i);
      s.fwd_order.push_back(e);
    }
    eu.last_seg = static_cast<int>(i);
  }
  assign_grad_shares(m, s);
  std::vector<char> seen(s.units.size(), 0);
  for (std::size_t i = s.segments.size(); i-- > 0;) {
    const int e = s.segments[i].exec;
    // No backward through a frozen unit: nothing to prefetch, unless it is the trained model's
    // own (FSDP2 prefetches by the forward's order, which it is in).
    if (s.units[static_cast<std::size_t>(e)].frozen && !s.units[static_cast<std::size_t>(e)].frozen_in_trained_model) continue;
    if (!seen[static_cast<std::size_t>(e)]) {
      seen[static_cast<std::size_t>(e)] = 1;
      s.bwd_order.push_back(e);
    }
  }

  // Modes: the root keeps its parameters (FSDP2 default), others follow the ZeRO stage, what the
  // profile recorded, and the plan.
  std::vector<int> mode(nu);
  for (std::size_t u = 0; u < nu; ++u)
    mode[u] = m.units[u].is_root || plan.zero_stage == 2 ? kKeepUnsharded
              : m.units[u].recorded_reshard == 0 || (m.units[u].recorded_reshard >= 2 && s.shard % m.units[u].recorded_reshard == 0)
                  ? m.units[u].recorded_reshard
                  : kReshard;
  for (const auto& n : plan.resharded) mode[static_cast<std::size_t>(unit_index(m, n, "resharded"))] = kReshard;
  for (const auto& n : plan.unsharded) mode[static_cast<std::size_t>(unit_index(m, n, "unsharded"))] = kKeepUnsharded;
  for (const auto& [n, k] : plan.reshard_degree) {
    if (k < 2 || s.shard % k != 0)
      plan_error("reshard_after_forward for '" + n + "': " + std::to_string(k) + " must divide the shard group size " +
                 std::to_string(s.shard));
    mode[static_cast<std::size_t>(unit_index(m, n, "reshard_after_forward"))] = k;
  }
  for (std::size_t e = 0; e < s.units.size(); ++e) {
    ExecUnit& eu = s.units[e];
    compute_unit_costs(s, eu, c, m.hbm_bytes_per_ns);
    int md = mode[static_cast<std::size_t>(eu.members.front())];
    for (int u : eu.members) {
      const int x = mode[static_cast<std::size_t>(u)];
      if (x == kKeepUnsharded) md = kKeepUnsharded;  // a bucket keeps its parameters if any member asks to
      else if (md != kKeepUnsharded && x > md) md = x;
    }
    set_reshard(s, static_cast<int>(e), md, c);
  }
  auto prefetch = [&](const std::map<std::string, std::vector<std::string>>& lists, bool fwd) {
    for (const auto& [from, targets] : lists) {
      ExecUnit& eu = s.units[static_cast<std::size_t>(s.exec_of_unit[static_cast<std::size_t>(unit_index(m, from, fwd ? "forward_prefetch" : "backward_prefetch"))])];
      (fwd ? eu.has_fwd_list : eu.has_bwd_list) = true;
      for (const auto& t : targets)
        (fwd ? eu.fwd_prefetch : eu.bwd_prefetch)
            .push_back(s.exec_of_unit[static_cast<std::size_t>(unit_index(m, t, fwd ? "forward_prefetch" : "backward_prefetch"))]);
    }
  };
  prefetch(plan.forward_prefetch, true);
  prefetch(plan.backward_prefetch, false);

  // Activation checkpointing: "*" for every non-root unit, then per-unit entries.
  std::vector<std::string> ckpt(nu, "none");
  if (auto it = plan.checkpoint.find("*"); it != plan.checkpoint.end())
    for (std::size_t u = 0; u < nu; ++u)
      if (!m.units[u].is_root) ckpt[u] = it->second;
  for (const auto& [n, v] : plan.checkpoint) {
    if (n == "*") continue;
    const int u = unit_index(m, n, "activation_checkpointing");
    if (m.units[static_cast<std::size_t>(u)].is_root) plan_error("activation_checkpointing: the root cannot be checkpointed (it holds the head and the tail)");
    ckpt[static_cast<std::size_t>(u)] = v;
  }
  for (std::size_t e = 0; e < s.units.size(); ++e) {
    ExecUnit& eu = s.units[e];
    Checkpoint cm = Checkpoint::None;
    std::string pattern;
    for (int u : eu.members) {
      const std::string& v = ckpt[static_cast<std::size_t>(u)];
      if (v == "full") cm = Checkpoint::Full;
      else if (v != "none" && cm == Checkpoint::None) cm = Checkpoint::Selective, pattern = v;
    }
    if (cm != Checkpoint::Selective) {
      set_checkpoint(s, static_cast<int>(e), cm);
      continue;
    }
    // Selective: the matching sub-modules' activations are recomputed, their inputs kept.
    bool matched = false;
    std::string known;
    for (std::size_t i = 0; i < m.segments.size(); ++i) {
      ExecSegment& es = s.segments[i];
      if (es.exec != static_cast<int>(e) || m.units[static_cast<std::size_t>(m.segments[i].unit)].is_root) continue;
      const SimSegment& sg = segments[i];
      CheckpointCost cost = es.by_mode[0];
      for (const auto& part : sg.parts) {
        known += (known.empty() ? "'" : ", '") + part.name + "'";
        if (!name_matches(pattern, part.name)) continue;
        matched = true;
        const std::int64_t keep = std::min(part.saved_bytes, std::max<std::int64_t>(0, sg.input_bytes));
        cost.saved -= part.saved_bytes - keep;
        cost.recompute += part.saved_bytes - keep;
        cost.recompute_ns += part.fwd_ns;
      }
      es.by_mode[2] = cost;
    }
    if (!matched)
      plan_error("activation_checkpointing: '" + pattern + "' matches no sub-module of '" + eu.name + "'" +
                 (known.empty() ? std::string(" (the model has no sub-module breakdown for it: use \"full\")") : " (sub-modules: " + known + ")"));
    eu.can_select = true;
    set_checkpoint(s, static_cast<int>(e), Checkpoint::Selective);
  }

  // Offload costs (always computed, so the planner can switch offload on without recompiling).
  s.offload = plan.offload == "cpu" ? Offload::Cpu : plan.offload == "optimizer" ? Offload::Optimizer : Offload::None;
  s.offload_prefetch_depth = plan.offload_prefetch_depth;
  s.pipelined_optimizer = plan.pipelined_optimizer;
  for (auto& eu : s.units) {
    const double shard_bytes = double(eu.params) * s.master_bytes / eu.shard;
    eu.h2d_ns = eu.d2h_ns = static_cast<TimeNs>(std::llround(shard_bytes / c.host_link_GBps));  // GB/s = bytes/ns
    eu.cpu_opt_ns = static_cast<TimeNs>(std::llround(double(eu.trainable) / eu.shard / c.host_optimizer_params_per_s * 1e9));
  }
  if (par.pp > 1 || par.pp_virtual > 1) split_pipeline(s, m, c);
  return s;
}

}  // namespace ss::sim
