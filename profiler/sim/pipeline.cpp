// Pipeline parallelism (docs/simulator.md §pipeline): the compiled step is split into pp x
// pp_virtual virtual stages of consecutive units; each is simulated alone for one micro-batch
// (its FSDP all-gathers, compute, model-parallel collectives, reduce-scatters), and the
// micro-batches are then scheduled over the rank stages (GPipe, 1F1B, interleaved 1F1B) with
// point-to-point sends between them. Every rank stage's memory is replayed from its schedule, so
// the first stage's extra in-flight micro-batches show as they happen.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "profiler/sim/compile_internal.h"
#include "storage/errors.h"

namespace ss::sim {
namespace {

[[noreturn]] void pipe_error(const std::string& what) {
  throw ProfileError(ProfileErrorKind::MalformedTable, "plan: parallelism: " + what);
}

TimeNs segment_cost(const ExecSegment& sg) { return sg.fwd_ns + sg.bwd_ns + sg.recompute_ns; }

// Boundaries (first segment of virtual stages 1..k-1): balanced by compute, at unit changes.
std::vector<int> balanced_split(const CompiledStep& s, const std::vector<int>& candidates, int k) {
  const std::size_t n = s.segments.size();
  std::vector<double> prefix(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + double(segment_cost(s.segments[i]));
  std::vector<int> out;
  std::size_t c = 0;
  for (int j = 1; j < k; ++j) {
    const double target = prefix[n] * j / k;
    // The candidate nearest the target that leaves one candidate for each later boundary.
    const std::size_t last = candidates.size() - static_cast<std::size_t>(k - j);
    std::size_t best = c;
    for (std::size_t q = c; q <= last; ++q)
      if (std::abs(prefix[static_cast<std::size_t>(candidates[q])] - target) <
          std::abs(prefix[static_cast<std::size_t>(candidates[best])] - target))
        best = q;
    out.push_back(candidates[best]);
    c = best + 1;
  }
  return out;
}

}  // namespace

void split_pipeline(CompiledStep& s, const SimModel& m, const ClusterModel& c) {
  const Parallelism& par = s.par;
  const int k = par.pp * par.pp_virtual;
  if (par.pp_virtual > 1 && par.pp_schedule != "interleaved") pipe_error("pp_virtual > 1 needs pp_schedule \"interleaved\"");
  if (par.pp_schedule == "interleaved" && s.micro_batches % par.pp != 0)
    pipe_error("the interleaved schedule needs the micro-batch count (gradient_accumulation " + std::to_string(s.micro_batches) +
               ") to be a multiple of pp " + std::to_string(par.pp));
  if (par.pp_schedule == "gpipe" && par.pp_virtual > 1) pipe_error("gpipe has one model chunk per stage");
  if (s.forward_only) pipe_error("a forward-only profile cannot be pipelined (no backward to schedule)");
  if (s.offload != Offload::None) pipe_error("offload together with pipeline parallelism is not modelled");
  // Segment indices where a new exec unit starts: the only places a stage can begin.
  std::vector<int> candidates;
  for (std::size_t i = 1; i < s.segments.size(); ++i) {
    if (s.segments[i].exec == s.segments[i - 1].exec) continue;
    // Only the root may be cut (head and tail, split by tail_params below); a non-root unit whose
    // segments are not contiguous (a bucket of u0 and u2, a parent around a nested unit) would
    // otherwise sit whole on two stages, its parameters and collectives counted twice.
    const int at = static_cast<int>(i);
    const bool cuts = std::any_of(s.units.begin(), s.units.end(),
                                  [&](const ExecUnit& u) { return !u.is_root && u.first_seg >= 0 && u.first_seg < at && u.last_seg >= at; });
    if (!cuts) candidates.push_back(at);
  }
  if (static_cast<int>(candidates.size()) < k - 1)
    // (candidates are the places to split; n of them make at most n + 1 stages)
    pipe_error("pp x pp_virtual = " + std::to_string(k) + " stages, but the model splits into at most " +
               std::to_string(candidates.size() + 1) + " stages (it has " + std::to_string(candidates.size()) +
               " FSDP unit boundaries to cut at)");
  std::vector<int> bounds;
  if (!par.pp_split.empty() || !par.pp_split_units.empty()) {
    const std::size_t given = par.pp_split.size() + par.pp_split_units.size();
    if (static_cast<int>(given) != k - 1)
      pipe_error("pp_split needs " + std::to_string(k - 1) + " units (the first unit of stages 1.." + std::to_string(k - 1) + ")");
    // Indices count units in forward order, as `simulate --units` lists them (the root first): a
    // profile's own order is its modules table's, where torchtitan's [norm, output] group came
    // second. Names are looked up.
    std::vector<int> forward;
    for (const auto& sg : m.segments)
      if (std::find(forward.begin(), forward.end(), sg.unit) == forward.end()) forward.push_back(sg.unit);
    std::vector<int> split;
    for (int i : par.pp_split) {
      if (i < 0 || static_cast<std::size_t>(i) >= forward.size()) pipe_error("pp_split: no unit " + std::to_string(i) + " in forward order");
      split.push_back(forward[static_cast<std::size_t>(i)]);
    }
    for (const auto& name : par.pp_split_units) {
      const int u = m.find_unit(name);
      if (u < 0) pipe_error("pp_split: no unit '" + name + "'");
      split.push_back(u);
    }
    for (int u : split) {
      int seg = -1;
      for (std::size_t i = 0; i < m.segments.size() && seg < 0; ++i)
        if (m.segments[i].unit == u) seg = static_cast<int>(i);
      if (seg < 0 || std::find(candidates.begin(), candidates.end(), seg) == candidates.end() || (!bounds.empty() && seg <= bounds.back()))
        pipe_error("pp_split: unit '" + m.units[static_cast<std::size_t>(u)].name +
                   "' does not start a stage in forward order after the previous one");
      bounds.push_back(seg);
    }
  } else {
    bounds = balanced_split(s, candidates, k);
  }
  bounds.insert(bounds.begin(), 0);
  bounds.push_back(static_cast<int>(s.segments.size()));

  // The root (or any unit cut by a boundary) is split by parameters: its tail segment's share is
  // SimUnit::tail_params where known, else the tail's share of the unit's forward time.
  s.root_exec = -1;
  for (std::size_t e = 0; e < s.units.size(); ++e)
    if (s.units[e].is_root) s.root_exec = static_cast<int>(e);
  double tail_share = 0.5;
  if (s.root_exec >= 0) {
    const ExecUnit& r = s.units[static_cast<std::size_t>(s.root_exec)];
    std::int64_t tail = 0, total = 0;
    bool known = true;
    for (int u : r.members) {
      const SimUnit& su = m.units[static_cast<std::size_t>(u)];
      total += su.param_count;
      if (su.tail_params < 0) known = false;
      else tail += su.tail_params;
    }
    if (known && total > 0) {
      tail_share = double(tail) / double(total);
    } else if (r.first_seg >= 0 && r.last_seg > r.first_seg) {
      const double head = double(s.segments[static_cast<std::size_t>(r.first_seg)].fwd_ns);
      const double tl = double(s.segments[static_cast<std::size_t>(r.last_seg)].fwd_ns);
      tail_share = head + tl > 0 ? tl / (head + tl) : 0.5;
    }
  }
  const bool cross_node = s.world / std::max(1, par.pp) >= s.gpus_per_node;
  s.stages.clear();
  for (int j = 0; j < k; ++j) {
    StageSpec st;
    st.first_seg = bounds[static_cast<std::size_t>(j)];
    st.last_seg = bounds[static_cast<std::size_t>(j) + 1] - 1;
    if (j + 1 < k) {
      // The next stage's input: its first segment's block input, as one TP x CP rank holds it.
      const SimSegment& nx = m.segments[static_cast<std::size_t>(bounds[static_cast<std::size_t>(j) + 1])];
      st.send_bytes = par.tp > 1 || par.cp > 1 ? parallel_segment(m, s, nx).input_bytes : nx.input_bytes;
      st.send_ns = c.p2p_ns(st.send_bytes, cross_node);
    }
    if (s.root_exec >= 0) {
      const ExecUnit& r = s.units[static_cast<std::size_t>(s.root_exec)];
      const bool has_head = r.first_seg >= st.first_seg && r.first_seg <= st.last_seg;
      const bool has_tail = r.last_seg >= st.first_seg && r.last_seg <= st.last_seg;
      if ((has_head || has_tail) && !(has_head && has_tail)) {
        st.has_root_part = true;
        st.root_share = has_tail ? tail_share : 1.0 - tail_share;
        st.root_part = r;
        st.root_part.params = static_cast<std::int64_t>(std::llround(double(r.params) * st.root_share));
        st.root_part.gathered = static_cast<std::int64_t>(std::llround(double(r.gathered) * st.root_share));
        st.root_part.trainable = static_cast<std::int64_t>(std::llround(double(r.trainable) * st.root_share));
        st.root_part.reduced = static_cast<std::int64_t>(std::llround(double(r.reduced) * st.root_share));
        st.root_part.ag_bytes = st.root_part.gathered * s.param_bytes;
        compute_unit_costs(s, st.root_part, c, m.hbm_bytes_per_ns);
      }
    }
    s.stages.push_back(std::move(st));
  }
}

namespace {

// The parent step restricted to one virtual stage, for one micro-batch.
CompiledStep stage_step(const CompiledStep& p, const StageSpec& st, std::vector<int>& parent_exec) {
  CompiledStep t;
  t.world = p.world, t.shard = p.shard, t.replicate = p.replicate, t.dp = p.dp, t.par = p.par;
  t.micro_batches = p.micro_batches;
  // torch.distributed.pipelining keeps what a backward gathered until the last micro-batch's
  // backward and reduces the gradients only then (pp_fsdp_every_microbatch: FSDP2's defaults).
  t.sync_every_microbatch = p.par.pp_fsdp_every_microbatch;
  t.hold_params_until_last_backward = !p.par.pp_fsdp_every_microbatch;
  t.separate_rs = p.separate_rs;
  t.param_bytes = p.param_bytes, t.master_bytes = p.master_bytes, t.reduce_bytes = p.reduce_bytes, t.optimizer_bytes = p.optimizer_bytes;
  t.overlap_slowdown = p.overlap_slowdown;
  t.comm_serialized = p.comm_serialized;
  t.gpus_per_node = p.gpus_per_node;
  t.other_memory_bytes = p.other_memory_bytes;
  t.other_backward_bytes = p.other_backward_bytes;
  std::vector<int> local(p.units.size(), -1);
  parent_exec.clear();
  for (int i = st.first_seg; i <= st.last_seg; ++i) {
    ExecSegment sg = p.segments[static_cast<std::size_t>(i)];
    // The schedule, not the training loop, takes a pipeline's outputs (schedule.step()).
    sg.caller_held_bytes = sg.backward_held_bytes = 0;
    const int e = sg.exec;
    if (local[static_cast<std::size_t>(e)] < 0) {
      local[static_cast<std::size_t>(e)] = static_cast<int>(t.units.size());
      parent_exec.push_back(e);
      const ExecUnit& src = p.units[static_cast<std::size_t>(e)];
      ExecUnit u = e == p.root_exec && st.has_root_part ? st.root_part : src;
      u.reshard = src.reshard;
      u.checkpoint = src.checkpoint;
      u.can_select = src.can_select;
      u.ag_bwd_ns = src.reshard == kKeepUnsharded ? 0
                    : src.reshard == kReshard     ? u.ag_ns
                                                  : static_cast<TimeNs>(std::llround(double(src.ag_bwd_ns) * (e == p.root_exec && st.has_root_part ? st.root_share : 1.0)));
      u.first_seg = u.last_seg = -1;
      t.units.push_back(std::move(u));
      t.fwd_order.push_back(local[static_cast<std::size_t>(e)]);
    }
    sg.exec = local[static_cast<std::size_t>(e)];
    ExecUnit& u = t.units[static_cast<std::size_t>(sg.exec)];
    const int li = static_cast<int>(t.segments.size());
    if (u.first_seg < 0) u.first_seg = li;
    u.last_seg = li;
    t.segments.push_back(std::move(sg));
  }
  // The stage module is the stage's FSDP root (fully_shard(stage) over its dp group), so its own
  // parameters' hooks span the whole stage: gathered at the stage's pre-forward, reduced at the
  // post-backward on the stage's input gradient, after every layer. A last stage's root holds the
  // norm and output head, which come last in forward: an empty head segment puts the root's
  // pre-forward and post-backward there. (Without it the head's parameters were resharded and
  // reduced before the last layer's backward: a 4-rank pp 2 x dp 2 job's last stage held
  // root + layer unsharded and their gradients at its peak, FSDPMemTracker; modelled, the layer's.)
  const int root_local = p.root_exec >= 0 ? local[static_cast<std::size_t>(p.root_exec)] : -1;
  if (root_local >= 0 && t.units[static_cast<std::size_t>(root_local)].first_seg > 0) {
    ExecSegment head;
    head.exec = root_local;
    t.segments.insert(t.segments.begin(), head);
    for (auto& u : t.units) ++u.first_seg, ++u.last_seg;
    t.units[static_cast<std::size_t>(root_local)].first_seg = 0;
    t.fwd_order.erase(std::find(t.fwd_order.begin(), t.fwd_order.end(), root_local));
    t.fwd_order.insert(t.fwd_order.begin(), root_local);
  }
  // Prefetch lists keep their targets inside the stage.
  for (auto& u : t.units)
    for (auto* list : {&u.fwd_prefetch, &u.bwd_prefetch}) {
      std::vector<int> kept;
      for (int v : *list)
        if (local[static_cast<std::size_t>(v)] >= 0) kept.push_back(local[static_cast<std::size_t>(v)]);
      *list = std::move(kept);
    }
  std::vector<char> seen(t.units.size(), 0);
  for (std::size_t i = t.segments.size(); i-- > 0;) {
    const int e = t.segments[i].exec;
    if (!seen[static_cast<std::size_t>(e)]) seen[static_cast<std::size_t>(e)] = 1, t.bwd_order.push_back(e);
  }
  // The optimizer updates this stage's parameters; the whole model's steps are divided by params.
  std::int64_t all = 0, mine = 0;
  for (const auto& u : p.units) all += u.params;
  for (const auto& u : t.units) mine += u.params;
  t.optimizer_ns = all > 0 ? static_cast<TimeNs>(std::llround(double(p.optimizer_ns) * double(mine) / double(all))) : 0;
  t.optimizer_temp_bytes = all > 0 ? std::llround(double(p.optimizer_temp_bytes) * double(mine) / double(all)) : 0;
  return t;
}

struct Slot {
  bool fwd;
  int chunk, micro;
};

// The op order of rank stage `s` (Megatron-LM's schedules; interleaved after
// get_forward_backward_func's forward_backward_pipelining_with_interleaving).
std::vector<Slot> stage_order(const std::string& kind, int p, int v, int m, int s) {
  std::vector<Slot> out;
  if (kind == "gpipe") {
    for (int i = 0; i < m; ++i) out.push_back({true, 0, i});
    for (int i = 0; i < m; ++i) out.push_back({false, 0, i});
    return out;
  }
  const int total = m * v;
  auto fwd_slot = [&](int q) { return Slot{true, (q / p) % v, (q / (p * v)) * p + q % p}; };
  auto bwd_slot = [&](int q) { return Slot{false, v - 1 - (q / p) % v, (q / (p * v)) * p + q % p}; };
  const int warm = v == 1 ? std::min(p - s - 1, m) : std::min((p - s - 1) * 2 + (v - 1) * p, total);
  for (int q = 0; q < warm; ++q) out.push_back(v == 1 ? Slot{true, 0, q} : fwd_slot(q));
  for (int q = 0; q < total - warm; ++q) {
    out.push_back(v == 1 ? Slot{true, 0, warm + q} : fwd_slot(warm + q));
    out.push_back(v == 1 ? Slot{false, 0, q} : bwd_slot(q));
  }
  for (int q = total - warm; q < total; ++q) out.push_back(v == 1 ? Slot{false, 0, q} : bwd_slot(q));
  return out;
}

// One virtual stage run through its slots in its rank's schedule order by one PassRunner, so FSDP's
// state (what is gathered, which gradients are held) carries from micro-batch to micro-batch as
// the schedule orders them. Each pass is later moved to the time the schedule gives it.
struct Pass {
  TimeNs t0 = 0, t1 = 0;
  std::size_t op_begin = 0, op_end = 0, mem_begin = 0, mem_end = 0;
};

struct Chunk {
  CompiledStep step;
  std::vector<int> parent_exec;
  SimResult r;
  std::vector<Pass> passes;     // in the chunk's slot order
  std::size_t persistent_end = 0;  // memory events before the first pass (held all step)
  Pass optimizer;               // after the last pass
};

int parent_of(const Chunk& c, int exec) { return exec < 0 ? -1 : c.parent_exec[static_cast<std::size_t>(exec)]; }

void run_chunk(Chunk& c, const std::vector<Slot>& slots) {
  PassRunner run(c.step, c.r);
  run.start();
  c.persistent_end = c.r.memory.size();
  std::size_t last_bwd = slots.size();
  for (std::size_t i = 0; i < slots.size(); ++i)
    if (!slots[i].fwd) last_bwd = i;
  auto begin = [&] { return Pass{run.now(), 0, c.r.ops.size(), 0, c.r.memory.size(), 0}; };
  auto end = [&](Pass& ps) { ps.t1 = run.now(), ps.op_end = c.r.ops.size(), ps.mem_end = c.r.memory.size(); };
  for (std::size_t i = 0; i < slots.size(); ++i) {
    Pass ps = begin();
    if (slots[i].fwd) run.forward_pass(slots[i].micro);
    else run.backward_pass(slots[i].micro, i == last_bwd);
    end(ps);
    c.passes.push_back(ps);
  }
  c.optimizer = begin();
  run.finish();
  end(c.optimizer);
  // The sequential run's exposed FSDP communication (simulate_flat's definition).
  c.r.exposed_comm_ns =
      std::max<TimeNs>(0, c.r.step_ns - c.r.compute_busy_ns - c.r.other_comm_ns - c.r.idle_ns - c.r.model_parallel_exposed_ns);
}

// Moves a pass's ops and memory events by `shift` into `r`.
void replay(const Chunk& c, const Pass& ps, TimeNs shift, SimResult& r) {
  for (std::size_t i = ps.mem_begin; i < ps.mem_end; ++i) {
    MemEvent e = c.r.memory[i];
    e.time += shift, e.exec = parent_of(c, e.exec);
    r.memory.push_back(e);
  }
  for (std::size_t i = ps.op_begin; i < ps.op_end; ++i) {
    SimOp o = c.r.ops[i];
    o.start += shift, o.end += shift, o.exec = parent_of(c, o.exec);
    r.ops.push_back(o);
  }
}

}  // namespace

SimResult simulate_pipeline(const CompiledStep& step, bool detail) {
  const int k = static_cast<int>(step.stages.size());
  const int p = std::max(1, step.par.pp), v = k / p, m = step.micro_batches;
  std::vector<std::vector<Slot>> order(static_cast<std::size_t>(p));
  for (int s = 0; s < p; ++s) order[static_cast<std::size_t>(s)] = stage_order(step.par.pp_schedule, p, v, m, s);
  // Each chunk's passes, in its rank's order; pass_of[s][q]: the q-th slot's index in its chunk.
  std::vector<Chunk> ch(static_cast<std::size_t>(k));
  std::vector<std::vector<std::size_t>> pass_of(static_cast<std::size_t>(p));
  for (int j = 0; j < k; ++j) {
    Chunk& c = ch[static_cast<std::size_t>(j)];
    const int s = j % p;
    c.step = stage_step(step, step.stages[static_cast<std::size_t>(j)], c.parent_exec);
    if (j == k - 1) c.step.optimizer_other_ns = step.optimizer_other_ns, c.step.optimizer_idle_ns = step.optimizer_idle_ns;
    std::vector<Slot> slots;
    for (const auto& sl : order[static_cast<std::size_t>(s)])
      if (sl.chunk * p + s == j) slots.push_back(sl);
    run_chunk(c, slots);
  }
  for (int s = 0; s < p; ++s) {
    std::vector<std::size_t> seen(static_cast<std::size_t>(v), 0);
    for (const auto& sl : order[static_cast<std::size_t>(s)]) pass_of[static_cast<std::size_t>(s)].push_back(seen[static_cast<std::size_t>(sl.chunk)]++);
  }
  auto pass = [&](int s, std::size_t q) -> const Pass& {
    const Slot& sl = order[static_cast<std::size_t>(s)][q];
    return ch[static_cast<std::size_t>(sl.chunk * p + s)].passes[pass_of[static_cast<std::size_t>(s)][q]];
  };

  // Schedule: each rank stage runs its slots in order, each once its input has arrived.
  std::vector<TimeNs> done_f(static_cast<std::size_t>(k * m), -1), done_b(static_cast<std::size_t>(k * m), -1);
  std::vector<std::vector<TimeNs>> start(static_cast<std::size_t>(p));
  std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
  std::vector<TimeNs> free_at(static_cast<std::size_t>(p), 0);
  std::size_t left = 0;
  for (const auto& o : order) left += o.size();
  while (left > 0) {
    bool progress = false;
    for (int s = 0; s < p; ++s) {
      auto& q = next[static_cast<std::size_t>(s)];
      const auto& ord = order[static_cast<std::size_t>(s)];
      while (q < ord.size()) {
        const Slot sl = ord[q];
        const int j = sl.chunk * p + s;
        const std::size_t at = static_cast<std::size_t>(j * m + sl.micro);
        TimeNs ready = 0;
        if (sl.fwd && j > 0) {
          const TimeNs d = done_f[static_cast<std::size_t>((j - 1) * m + sl.micro)];
          if (d < 0) break;
          ready = d + step.stages[static_cast<std::size_t>(j - 1)].send_ns;
        } else if (!sl.fwd) {
          const TimeNs d = j + 1 < k ? done_b[static_cast<std::size_t>((j + 1) * m + sl.micro)] : done_f[at];
          if (d < 0) break;
          ready = d + (j + 1 < k ? step.stages[static_cast<std::size_t>(j)].send_ns : 0);
        }
        const Pass& ps = pass(s, q);
        const TimeNs t0 = std::max(free_at[static_cast<std::size_t>(s)], ready);
        free_at[static_cast<std::size_t>(s)] = t0 + (ps.t1 - ps.t0);
        (sl.fwd ? done_f : done_b)[at] = free_at[static_cast<std::size_t>(s)];
        start[static_cast<std::size_t>(s)].push_back(t0);
        ++q, --left, progress = true;
      }
    }
    if (!progress) throw std::logic_error("pipeline schedule deadlock (a bug in stage_order)");
  }

  // Replay every rank stage's memory (and ops, for the shown stage's timeline) from its schedule.
  SimResult out;
  std::vector<SimResult> per(static_cast<std::size_t>(p));
  for (int s = 0; s < p; ++s) {
    SimResult& r = per[static_cast<std::size_t>(s)];
    const auto& ord = order[static_cast<std::size_t>(s)];
    for (int cidx = 0; cidx < v; ++cidx) {
      const Chunk& c = ch[static_cast<std::size_t>(cidx * p + s)];
      for (std::size_t i = 0; i < c.persistent_end; ++i) {  // a rank's context and workspace once, not per chunk
        const MemEvent& e = c.r.memory[i];
        if (cidx == 0 || e.cat != MemCat::Other) r.memory.push_back({e.time, e.delta, parent_of(c, e.exec), e.cat});
      }
    }
    SimResult::Stage info;
    bool seen_f = false, seen_b = false;
    for (std::size_t q = 0; q < ord.size(); ++q) {
      const Slot sl = ord[q];
      const int j = sl.chunk * p + s;
      const Chunk& c = ch[static_cast<std::size_t>(j)];
      const Pass& ps = pass(s, q);
      const TimeNs t0 = start[static_cast<std::size_t>(s)][q], dur = ps.t1 - ps.t0;
      replay(c, ps, t0 - ps.t0, r);
      // A later stage's input arrives by a receive, not from a unit of this rank: each
      // micro-batch's is held from its forward to its backward, which computes its gradient.
      if (j > 0) {
        const std::int64_t in = step.stages[static_cast<std::size_t>(j - 1)].send_bytes;
        r.memory.push_back({sl.fwd ? t0 : t0 + dur, sl.fwd ? in : -in, c.parent_exec.front(), MemCat::Activation});
      }
      info.busy_ns += dur;
      if (sl.fwd && !seen_f) info.fwd_ns = dur, seen_f = true;
      if (!sl.fwd && !seen_b) info.bwd_ns = dur, seen_b = true;
      // The stage sends the activation (forward) or its gradient (backward) on.
      const bool sends = sl.fwd ? j + 1 < k : j > 0;
      if (sends) {
        const StageSpec& link = step.stages[static_cast<std::size_t>(sl.fwd ? j : j - 1)];
        const TimeNs end = t0 + dur;
        r.ops.push_back({end, end + link.send_ns, link.send_bytes, -1, sl.micro, Lane::PipelineP2P, OpKind::PpSend,
                         sl.fwd ? Phase::Forward : Phase::Backward});
        ++r.p2p_sends;
        r.p2p_bytes += link.send_bytes;
      }
    }
    // Each chunk's optimizer step after the stage's last backward; the chunks' counts.
    TimeNs t = free_at[static_cast<std::size_t>(s)];
    for (int cidx = 0; cidx < v; ++cidx) {
      const Chunk& c = ch[static_cast<std::size_t>(cidx * p + s)];
      replay(c, c.optimizer, t - c.optimizer.t0, r);
      const TimeNs opt = c.optimizer.t1 - c.optimizer.t0;
      t += opt;
      info.busy_ns += opt;
      r.all_gathers += c.r.all_gathers, r.reduce_scatters += c.r.reduce_scatters, r.all_reduces += c.r.all_reduces;
      r.recomputes += c.r.recomputes, r.recompute_ns += c.r.recompute_ns;
      r.tp_collectives += c.r.tp_collectives, r.tp_bytes += c.r.tp_bytes;
      r.cp_collectives += c.r.cp_collectives, r.cp_bytes += c.r.cp_bytes;
      r.ep_collectives += c.r.ep_collectives, r.ep_bytes += c.r.ep_bytes;
      r.model_parallel_ns += c.r.model_parallel_ns, r.model_parallel_exposed_ns += c.r.model_parallel_exposed_ns;
      r.exposed_comm_ns += c.r.exposed_comm_ns;
    }
    r.step_ns = t;
    for (const auto& o : r.ops) {
      if (o.lane == Lane::Compute && o.kind != OpKind::OtherComm && o.kind != OpKind::Idle) r.compute_busy_ns += o.end - o.start;
      if (o.kind == OpKind::OtherComm) r.other_comm_ns += o.end - o.start;
      if (o.kind == OpKind::Idle) r.idle_ns += o.end - o.start;
      if (o.lane >= Lane::Nccl && o.lane <= Lane::AllReduce) r.comm_busy_ns += o.end - o.start;
    }
    sweep_memory(step, r, detail);
    // Names of the stage's first and last units, over its chunks.
    const auto& first = ch[static_cast<std::size_t>(s)];
    const auto& last = ch[static_cast<std::size_t>((v - 1) * p + s)];
    auto name = [&](int e) {
      const std::string& n = step.units[static_cast<std::size_t>(e)].name;
      return n.empty() ? std::string("(root)") : n;
    };
    info.units = name(first.parent_exec.front()) + " .. " + name(last.parent_exec.back());
    info.end_ns = r.step_ns;
    info.peak_bytes = r.peak_bytes;
    // In-flight micro-batches: forwards done minus backwards done, at most.
    int live = 0;
    for (const auto& sl : ord) live += sl.fwd ? 1 : -1, info.max_in_flight = std::max(info.max_in_flight, live);
    out.stages.push_back(info);
  }
  // Shown: the stage with the highest memory (the one a budget must fit); step: the slowest.
  int shown = 0;
  for (int s = 1; s < p; ++s)
    if (per[static_cast<std::size_t>(s)].peak_bytes > per[static_cast<std::size_t>(shown)].peak_bytes) shown = s;
  auto stages = std::move(out.stages);
  out = std::move(per[static_cast<std::size_t>(shown)]);
  out.stages = std::move(stages);
  out.shown_stage = shown;
  for (const auto& st : out.stages) out.step_ns = std::max(out.step_ns, st.end_ns);
  out.bubble_ns = std::max<TimeNs>(0, out.stages[static_cast<std::size_t>(shown)].end_ns - out.stages[static_cast<std::size_t>(shown)].busy_ns);
  std::stable_sort(out.ops.begin(), out.ops.end(), [](const SimOp& a, const SimOp& b) { return a.start < b.start; });
  return out;
}

}  // namespace ss::sim
