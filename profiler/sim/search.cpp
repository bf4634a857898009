// The what-if search: enumerate meshes x micro-batches x checkpointing x offload, prune by static
// memory, by dominance and by step-time lower bounds, simulate the rest (detail off), rank by
// throughput, then give every configuration that could still make the list the cost planner's
// unshard set and re-simulate its final plan (so a listed prediction is exactly what
// `simulate --plan` of its plan gives).
#include "profiler/sim/search.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>

#include "profiler/sim/device_table.h"
#include "profiler/sim/planner.h"
#include "storage/errors.h"

namespace ss::sim {
namespace {

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

// One configuration family: a mesh and a micro-batch count. Its options, checkpointing level x
// offload, are tried from the lightest on; an option is skipped once a lighter one in either
// direction fits (checkpointing never shortens the step; offload is chosen only when needed).
struct Group {
  Parallelism par;
  int dp = 1, micro = 1;
  int offloads = 1;       // 1: none only; 3: none, optimizer, cpu
  std::size_t first = 0;  // its first option's index (level-major)
};
const char* const kOffloads[] = {"none", "optimizer", "cpu"};
// kOffloads[i] as the compiled step's mode (the same order as the enum).
Offload offload_of(int i) { return static_cast<Offload>(i); }
static_assert(static_cast<int>(Offload::None) == 0 && static_cast<int>(Offload::Optimizer) == 1 &&
              static_cast<int>(Offload::Cpu) == 2);

struct Counters {
  int invalid = 0, pruned_static = 0, pruned_bound = 0, dominated = 0, simulated = 0, fitting = 0;
  void add(const Counters& o) {
    invalid += o.invalid, pruned_static += o.pruned_static, pruned_bound += o.pruned_bound;
    dominated += o.dominated, simulated += o.simulated, fitting += o.fitting;
  }
};

// Runs fn(i) for i in [0, n) on `threads` threads (work handed out one index at a time).
template <class Fn>
void parallel_for(int n, int threads, Fn fn) {
  threads = std::clamp(threads, 1, std::max(1, n));
  if (threads == 1) {
    for (int i = 0; i < n; ++i) fn(i, 0);
    return;
  }
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int i = next++; i < n; i = next++) fn(i, t);
    });
  for (auto& th : pool) th.join();
}

// A result without its timeline and memory events: the ranking needs the numbers only.
SimResult summary(SimResult r) {
  r.ops = {};
  r.memory = {};
  r.unit_memory = {};
  return r;
}

bool faster(const SearchConfig& a, const SearchConfig& b) {
  // Time per sequence (equal sequences per step: the step time's order); ties to less memory, then
  // to the simpler mesh (fewer model-parallel ranks), so the order is the same on every run.
  const double ka = double(a.result.step_ns) * double(b.sequences), kb = double(b.result.step_ns) * double(a.sequences);
  if (ka != kb) return ka < kb;
  if (a.result.peak_bytes != b.result.peak_bytes) return a.result.peak_bytes < b.result.peak_bytes;
  const auto& p = a.plan.parallel;
  const auto& q = b.plan.parallel;
  return std::tie(p.tp, p.cp, p.pp, p.ep, a.plan.gradient_accumulation, p.cp_kind, a.plan.offload, a.checkpoint) <
         std::tie(q.tp, q.cp, q.pp, q.ep, b.plan.gradient_accumulation, q.cp_kind, b.plan.offload, b.checkpoint);
}

void fill_rates(SearchConfig& c, const SearchShape& shape, int world) {
  const double s = double(c.result.step_ns) / 1e9;
  if (s <= 0) return;
  c.sequences_per_s = double(c.sequences) / s;
  if (shape.seq_len > 0) c.tokens_per_s = c.sequences_per_s * double(shape.seq_len);
  if (shape.flops_per_sequence > 0 && shape.peak_flops_per_gpu > 0)
    c.mfu = c.sequences_per_s * shape.flops_per_sequence / (double(world) * shape.peak_flops_per_gpu);
}

// What segments first..last put on the compute stream in series in one forward or backward pass,
// whatever overlaps: compute, recompute, model-parallel collectives (each blocks the stream), ring
// attention's excess over the score work, and measured extras.
TimeNs serial_pass_ns(const CompiledStep& s, int first, int last, bool fwd) {
  auto mp = [](const ExecSegment& sg, bool f) {
    TimeNs t = 0;
    for (const auto& p : sg.mp_ops)
      if (f ? p.in_fwd : p.in_bwd) t += f ? p.ns : p.bwd_ns;
    return t + ring_exposed_ns(sg, f);
  };
  TimeNs t = 0;
  for (int i = first; i <= last; ++i) {
    const ExecSegment& sg = s.segments[static_cast<std::size_t>(i)];
    if (fwd) {
      t += sg.fwd_ns + sg.fwd_other_ns + sg.fwd_idle_ns + mp(sg, true);
    } else {
      t += sg.recompute_ns + sg.bwd_ns + sg.bwd_other_ns + sg.bwd_idle_ns + mp(sg, false);
      // A full rerun issues the forward's model-parallel collectives again.
      if (sg.recompute_ns > 0 && s.units[static_cast<std::size_t>(sg.exec)].checkpoint == Checkpoint::Full) t += mp(sg, true);
    }
  }
  return t;
}

// 1F1B / GPipe with one chunk per stage: stage j cannot start before the first micro-batch's
// forward has crossed stages 0..j-1, and the step cannot end before the last micro-batch's
// gradient has crossed them back after stage j's m forwards and backwards. `first` is a stage's
// first forward, `fwd` each later one, `bwd` each backward (all lower bounds of those passes).
TimeNs pipeline_bound_ns(const CompiledStep& s, const std::vector<TimeNs>& first, const std::vector<TimeNs>& fwd,
                         const std::vector<TimeNs>& bwd) {
  const TimeNs m = s.micro_batches;
  TimeNs before = 0, most = 0;
  for (std::size_t j = 0; j < s.stages.size(); ++j) {
    most = std::max(most, before + first[j] + (m - 1) * fwd[j] + m * bwd[j]);
    before += first[j] + bwd[j] + 2 * s.stages[j].send_ns;
  }
  return most;
}

// No unshard set makes the step shorter than this (without the overlap slowdown, which unsharding
// could relieve; with it, the step's lower bound). Without a pipeline the compute stream's own
// work, its measured extras and its model-parallel waits stay; the exposed FSDP communication and
// the backward copy-outs of the units still gathered in backward are all that keeping units
// unsharded can remove.
// With a pipeline of one chunk per stage, a stage's first forward is what it was (every unit is
// gathered in it, whatever the plan; keeping one unsharded only changes memory there); its later
// forwards find what the previous backward held gathered, and they and the backwards are at least
// their serial work. (Taking the first forward for every micro-batch was not a bound: a last stage
// gathers its root, the output head, and its first layer before any compute, and a plan keeping
// the last stage's four layers unsharded came out under that figure, pruned from the list.)
double unshard_bound_ns(const CompiledStep& s, const SimResult& r, double lower_bound_ns) {
  if (s.overlap_slowdown > 0) return lower_bound_ns;
  if (!s.stages.empty()) {
    const std::size_t k = s.stages.size();
    if (static_cast<int>(k) != std::max(1, s.par.pp) || r.stages.size() != k) return lower_bound_ns;
    std::vector<TimeNs> first(k), f(k), b(k);
    for (std::size_t j = 0; j < k; ++j) {
      first[j] = r.stages[j].fwd_ns;
      f[j] = serial_pass_ns(s, s.stages[j].first_seg, s.stages[j].last_seg, true);
      b[j] = serial_pass_ns(s, s.stages[j].first_seg, s.stages[j].last_seg, false);
    }
    return std::max(lower_bound_ns, double(pipeline_bound_ns(s, first, f, b)));
  }
  TimeNs copies = 0;
  for (const auto& u : s.units)
    if (u.reshard != kKeepUnsharded) copies += u.copyout_ns + u.bwd_host_ns;
  return std::max(lower_bound_ns, double(r.step_ns - r.exposed_comm_ns - TimeNs(s.micro_batches) * copies));
}

}  // namespace

SearchShape search_shape(const ModelDescription& d, const SimModel& m, const std::string& device) {
  SearchShape s;
  s.known = true;
  s.heads = d.heads, s.kv_heads = d.kv_heads, s.layers = d.layers;
  s.seq_len = d.seq_len;
  s.micro_batch = d.micro_batch;
  s.num_experts = d.num_experts;
  const auto dev = find_device(device.empty() ? d.device : device);
  if (dev) {
    s.peak_flops_per_gpu = dev->peak_bf16_tflops * 1e12;
    // Model FLOPs (no recompute): forward + 2x forward for backward, from the segments' forward
    // times at the throughput they were derived from.
    const double flops_per_ns = dev->peak_bf16_tflops * (d.achievable_fraction > 0 ? d.achievable_fraction : dev->achievable_fraction) * 1e3;
    double fwd_ns = 0;
    for (const auto& sg : m.segments) fwd_ns += double(sg.fwd_ns);
    s.flops_per_sequence = 3.0 * fwd_ns * flops_per_ns / double(std::max(1, d.micro_batch));
  }
  return s;
}

std::int64_t static_memory_bytes(const CompiledStep& s) {
  // Bytes per parameter that stay on the device for the whole optimizer step.
  const bool grads = !s.forward_only;
  auto unit_bytes = [&](const ExecUnit& u) {
    const UnitStateBytes state = unit_state_bytes(s, u);
    std::int64_t b = state.sharded_params + state.optimizer_states;
    if (grads && s.offload != Offload::Cpu && u.trainable > 0) b += u.trainable * s.master_bytes / u.shard;
    return b;
  };
  std::int64_t most = 0;
  if (s.stages.empty()) {
    for (const auto& u : s.units) most += unit_bytes(u);
  } else {
    // Per rank stage: its chunks' units (the root's part as that stage holds it).
    const int p = std::max(1, s.par.pp);
    std::vector<std::int64_t> per(static_cast<std::size_t>(p), 0);
    for (std::size_t j = 0; j < s.stages.size(); ++j) {
      const StageSpec& st = s.stages[j];
      std::vector<char> seen(s.units.size(), 0);
      for (int i = st.first_seg; i <= st.last_seg; ++i) {
        const int e = s.segments[static_cast<std::size_t>(i)].exec;
        if (seen[static_cast<std::size_t>(e)]) continue;
        seen[static_cast<std::size_t>(e)] = 1;
        const ExecUnit& u = e == s.root_exec && st.has_root_part ? st.root_part : s.units[static_cast<std::size_t>(e)];
        per[j % static_cast<std::size_t>(p)] += unit_bytes(u);
      }
    }
    most = *std::max_element(per.begin(), per.end());
  }
  // The optimizer's own device memory, while all of the above is held.
  return most + s.other_memory_bytes + (s.offload == Offload::None ? s.optimizer_temp_bytes : 0);
}

TimeNs step_lower_bound_ns(const CompiledStep& s) {
  auto pass = [&](int first, int last, bool fwd) { return serial_pass_ns(s, first, last, fwd); };
  const TimeNs m = s.micro_batches;
  const int last = static_cast<int>(s.segments.size()) - 1;
  if (s.stages.empty()) {
    TimeNs t = m * pass(0, last, true);
    if (!s.forward_only) t += m * pass(0, last, false) + (s.offload == Offload::None ? s.optimizer_ns : 0);
    return t;
  }
  const std::size_t k = s.stages.size();
  if (static_cast<int>(k) != std::max(1, s.par.pp)) {
    TimeNs t = 0;  // interleaved: the busiest rank stage's work alone
    std::vector<TimeNs> per(static_cast<std::size_t>(std::max(1, s.par.pp)), 0);
    for (std::size_t j = 0; j < k; ++j)
      per[j % per.size()] += m * (pass(s.stages[j].first_seg, s.stages[j].last_seg, true) + pass(s.stages[j].first_seg, s.stages[j].last_seg, false));
    for (TimeNs v : per) t = std::max(t, v);
    return t;
  }
  std::vector<TimeNs> f(k), b(k);
  for (std::size_t j = 0; j < k; ++j)
    f[j] = pass(s.stages[j].first_seg, s.stages[j].last_seg, true), b[j] = pass(s.stages[j].first_seg, s.stages[j].last_seg, false);
  return pipeline_bound_ns(s, f, f, b);
}

SearchResult search_configs(const SimModel& model, const SearchShape& shape, const FsdpPlan& base, const ClusterModel& cluster,
                            const SearchRequest& req) {
  const auto t0 = std::chrono::steady_clock::now();
  SearchResult out;
  const int world = base.world_size > 0 ? base.world_size : cluster.world_size;
  if (world < 1) throw ProfileError(ProfileErrorKind::MalformedTable, "search: the world size must be at least 1");
  if (req.budget_bytes <= 0) throw ProfileError(ProfileErrorKind::MalformedTable, "search: the memory budget must be positive");
  const bool shaped = shape.known && model.has_parallel_shapes;
  const int b = std::max(1, shape.micro_batch);

  // Places a pipeline can be cut: where the owning unit changes (pipeline.cpp's rule).
  int splits = 0;
  for (std::size_t i = 1; i < model.segments.size(); ++i)
    if (model.segments[i].unit != model.segments[i - 1].unit) ++splits;
  const int max_pp = std::min(req.max_pp > 0 ? req.max_pp : splits + 1, splits + 1);
  const int max_tp = req.max_tp > 0 ? req.max_tp : std::max(1, cluster.gpus_per_node);
  bool moe = false;
  for (const auto& u : model.units) moe = moe || u.expert;
  // Selective checkpointing of "attention" needs that sub-module in every non-root unit.
  bool selective = req.selective && !model.forward_only;
  for (const auto& sg : model.segments) {
    if (model.units[static_cast<std::size_t>(sg.unit)].is_root) continue;
    bool has = false;
    for (const auto& p : sg.parts) has = has || p.name == "attention";
    selective = selective && has;
  }
  std::vector<std::string> levels{"none"};
  if (!model.forward_only) {
    if (selective) levels.push_back("attention");
    levels.push_back("full");
  }
  if (!shaped) out.notes.push_back("tensor, context and expert parallelism need a model description (--model): tp = cp = ep = 1");
  if (req.selective && !selective && !model.forward_only)
    out.notes.push_back("selective checkpointing not searched: not every unit has an attention sub-module");
  if (!shaped && !model.forward_only)
    out.notes.push_back("full checkpointing of a profile's unit keeps no saved input (its size is not recorded): optimistic on memory");
  if (model.forward_only) out.notes.push_back("a forward-only profile: no checkpointing, no pipeline");

  // Enumerate the configuration families.
  std::vector<Group> groups;
  Counters total;
  const int replicate = std::max(1, base.hsdp_replicate);
  for (int tp : divisors(world)) {
    if (tp > max_tp || (tp > 1 && !shaped)) continue;
    if (tp > 1 && (shape.heads % tp != 0 || shape.kv_heads % tp != 0)) continue;  // TP splits the (KV) heads
    for (int cp = 1; cp <= std::min(req.max_cp, world / tp); cp *= 2) {
      if ((world / tp) % cp != 0 || (cp > 1 && !shaped)) continue;
      std::vector<std::string> kinds;
      if (cp == 1) kinds.push_back("ulysses");
      else {
        if (shape.heads % (tp * cp) == 0) kinds.push_back("ulysses");  // heads are scattered over the CP group
        if (shape.seq_len % (2 * cp) == 0) kinds.push_back("ring");     // 2 x cp load-balanced chunks
      }
      for (const auto& kind : kinds)
        for (int pp : divisors(world / (tp * cp))) {
          if (pp > max_pp || (pp > 1 && model.forward_only)) continue;
          const int dp = world / (tp * cp * pp);
          if (dp % replicate != 0) continue;
          const int shard = dp / replicate * cp;
          std::vector<int> eps{1};
          if (moe && shaped)
            for (int ep : divisors(shard))
              if (ep > 1 && shape.num_experts % ep == 0) eps.push_back(ep);
          const int offloads = req.offload && pp == 1 && !model.forward_only ? 3 : 1;
          std::vector<int> micros;
          if (req.global_batch > 0) {
            // Fixed tokens per step: the micro-batch count follows from dp.
            const std::int64_t per = std::int64_t(dp) * b;
            if (req.global_batch % per != 0 || req.global_batch / per > 4096) {
              total.invalid += static_cast<int>(levels.size() * eps.size()) * offloads;
              continue;
            }
            micros.push_back(static_cast<int>(req.global_batch / per));
          } else {
            // Without a pipeline, more micro-batches only accumulate a bigger batch (the same work
            // per sequence, the optimizer step amortised): one is enough to compare.
            for (int m : {1, pp, 2 * pp, 4 * pp})
              if (m <= 4096 && (pp > 1 || m == 1) && std::find(micros.begin(), micros.end(), m) == micros.end()) micros.push_back(m);
          }
          for (int ep : eps)
            for (int m : micros) {
              Group g;
              g.par.tp = tp, g.par.sequence_parallel = tp > 1, g.par.cp = cp, g.par.cp_kind = kind, g.par.pp = pp, g.par.ep = ep;
              g.dp = dp, g.micro = m, g.offloads = offloads;
              groups.push_back(g);
            }
        }
    }
  }
  const std::size_t nl = levels.size();
  std::size_t options = 0;
  for (auto& g : groups) g.first = options, options += nl * static_cast<std::size_t>(g.offloads);
  out.enumerated = static_cast<int>(options) + total.invalid;

  // The plan of one family's option (checkpointing level li, offload oi).
  auto plan_of = [&](const Group& g, std::size_t li, int oi) {
    FsdpPlan plan = base;
    plan.world_size = world;
    plan.parallel = g.par;
    plan.gradient_accumulation = g.micro;
    plan.offload = kOffloads[oi];
    plan.unsharded.clear();
    plan.checkpoint = {{"*", levels[li]}};
    return plan;
  };
  const int threads = std::max(1, req.threads);

  // Pass 1 (compile only): each option's static memory and step-time lower bound.
  struct Bound {
    bool valid = false;
    std::int64_t static_bytes = 0;
    double lb_per_seq = 0;  // ns per sequence
  };
  std::vector<Bound> bounds(options);
  std::vector<double> family_bound(groups.size(), 1e300);  // the least bound of a family's options
  parallel_for(static_cast<int>(groups.size()), threads, [&](int gi, int) {
    const Group& g = groups[static_cast<std::size_t>(gi)];
    const double seqs = double(g.dp) * g.micro * b;
    for (std::size_t li = 0; li < nl; ++li) {
      // One compile per level: the offload options only switch CompiledStep::offload (its costs are
      // always compiled in), as the cost planner switches them.
      std::optional<CompiledStep> step;
      try {
        step = compile_step(model, plan_of(g, li, 0), cluster);
      } catch (const ProfileError&) {
        continue;  // degrees this model cannot take (e.g. more stages than places to split)
      }
      for (int oi = 0; oi < g.offloads; ++oi) {
        Bound& bd = bounds[g.first + li * static_cast<std::size_t>(g.offloads) + static_cast<std::size_t>(oi)];
        step->offload = offload_of(oi);
        bd.static_bytes = static_memory_bytes(*step);
        bd.lb_per_seq = double(step_lower_bound_ns(*step)) / seqs;
        bd.valid = true;
        family_bound[static_cast<std::size_t>(gi)] = std::min(family_bound[static_cast<std::size_t>(gi)], bd.lb_per_seq);
      }
    }
  });

  // Pass 2: families in order of their bound (the likely best first, so that the bar rises early),
  // options from the lightest on. An option whose bound per sequence is over the top-th best time
  // found so far cannot make the list.
  std::vector<int> order(groups.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int c) {
    return family_bound[static_cast<std::size_t>(a)] < family_bound[static_cast<std::size_t>(c)];
  });
  const std::size_t top_n = static_cast<std::size_t>(std::max(1, req.top));
  std::vector<double> best;  // the top_n best times per sequence so far, ascending
  std::mutex mu;
  auto bar = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return !req.prune || best.size() < top_n ? 1e300 : best.back();
  };
  std::vector<std::vector<SearchConfig>> found(groups.size());
  std::vector<Counters> per_thread(static_cast<std::size_t>(threads));
  std::atomic<int> done{0}, sims{0};
  parallel_for(static_cast<int>(order.size()), threads, [&](int oi_, int t) {
    const int gi = order[static_cast<std::size_t>(oi_)];
    const Group& g = groups[static_cast<std::size_t>(gi)];
    const std::size_t no = static_cast<std::size_t>(g.offloads);
    Counters& c = per_thread[static_cast<std::size_t>(t)];
    // covered: the option fits, or a lighter one does (so it need not be tried).
    std::vector<char> covered(nl * no, 0);
    for (std::size_t li = 0; li < nl; ++li) {
      std::optional<CompiledStep> step;  // the level's compile, shared by its offload options
      for (std::size_t oi = 0; oi < no; ++oi) {
        const std::size_t at = li * no + oi;
        if ((li > 0 && covered[at - no]) || (oi > 0 && covered[at - 1])) {
          covered[at] = 1;
          ++c.dominated;
          continue;
        }
        const Bound& bd = bounds[g.first + at];
        if (!bd.valid) {
          ++c.invalid;
          continue;
        }
        if (bd.static_bytes > req.budget_bytes) {
          ++c.pruned_static;  // parameters, gradients and optimizer states alone are over
          continue;
        }
        if (bd.lb_per_seq > bar()) {
          ++c.pruned_bound;
          continue;
        }
        FsdpPlan plan = plan_of(g, li, static_cast<int>(oi));
        if (!step) step = compile_step(model, plan, cluster);
        step->offload = offload_of(static_cast<int>(oi));
        SimResult r = simulate(*step, false);
        ++c.simulated;
        ++sims;
        if (r.peak_bytes > req.budget_bytes) continue;
        ++c.fitting;
        covered[at] = 1;
        SearchConfig cfg;
        cfg.plan = std::move(plan);
        cfg.dp = g.dp;
        cfg.checkpoint = levels[li];
        cfg.result = summary(std::move(r));
        cfg.sequences = std::int64_t(g.dp) * g.micro * b;
        cfg.lower_bound_ns = bd.lb_per_seq * double(cfg.sequences);
        {
          std::lock_guard<std::mutex> lock(mu);
          const double key = double(cfg.result.step_ns) / double(cfg.sequences);
          best.insert(std::upper_bound(best.begin(), best.end(), key), key);
          if (best.size() > top_n) best.pop_back();
        }
        found[static_cast<std::size_t>(gi)].push_back(std::move(cfg));
      }
    }
    const int d = ++done;
    if (req.progress && (d % std::max(1, req.progress_every) == 0 || d == static_cast<int>(groups.size()))) {
      std::lock_guard<std::mutex> lock(mu);
      req.progress(d, static_cast<int>(groups.size()), sims.load());
    }
  });
  for (const auto& c : per_thread) total.add(c);
  out.invalid = total.invalid, out.pruned_static = total.pruned_static, out.pruned_bound = total.pruned_bound, out.dominated = total.dominated;
  out.simulated = total.simulated, out.fitting = total.fitting;

  std::vector<SearchConfig> all;
  for (auto& f : found)
    for (auto& c : f) all.push_back(std::move(c));
  for (auto& c : all) fill_rates(c, shape, world);
  std::sort(all.begin(), all.end(), faster);
  if (all.empty()) {
    out.reason = "no configuration fits the budget: " + std::to_string(out.pruned_static) +
                 " were over it on sharded parameters, gradients and optimizer states alone, " + std::to_string(out.simulated) +
                 " simulated peaks were over it" + (out.simulated + out.pruned_static == 0 ? " (no valid mesh for this world size)" : "");
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;
  }

  // The unshard set: the cost planner spends the memory left under the budget on keeping units
  // unsharded where that shortens the step, and each final plan is re-simulated. Candidates go in
  // rank order; one whose bound under any unshard set (unshard_bound_ns) is over the top-th best
  // time so far -- planned or not, as planning only shortens -- cannot make the list and is not
  // planned. So, uncapped, the list is what planning every fitting configuration would give.
  const int top = std::max(1, req.top);
  const auto t_plan = std::chrono::steady_clock::now();
  std::vector<double> now(all.size());  // current time per sequence of each configuration
  for (std::size_t i = 0; i < all.size(); ++i) now[i] = double(all[i].result.step_ns) / double(all[i].sequences);
  // Candidates: configurations whose lower bound is under the top-th best time before planning
  // (the others cannot make the list, and whether the bounds skipped them depends on the order
  // the work was done in: leaving them out keeps the list the same on any number of threads).
  const double pre_bar = all.size() >= top_n ? now[top_n - 1] : 1e300;
  std::vector<std::size_t> cands;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (all[i].lower_bound_ns / double(all[i].sequences) <= pre_bar) cands.push_back(i);
  const int k = std::min<int>(static_cast<int>(cands.size()), req.unshard_top_k >= 0 ? req.unshard_top_k : static_cast<int>(cands.size()));
  auto nth_best = [&] {  // under mu: the top-th best time per sequence now
    if (now.size() < top_n) return 1e300;
    std::vector<double> v = now;
    std::nth_element(v.begin(), v.begin() + static_cast<long>(top_n - 1), v.end());
    return v[top_n - 1];
  };
  auto plan_bar = [&] { return req.prune ? nth_best() : 1e300; };
  std::vector<int> plan_sims(static_cast<std::size_t>(std::max(1, k)), 0);
  std::atomic<int> planned{0};
  parallel_for(k, threads, [&](int ci, int) {
    const std::size_t i = cands[static_cast<std::size_t>(ci)];
    SearchConfig& c = all[i];
    const CompiledStep step = compile_step(model, c.plan, cluster);
    {
      std::lock_guard<std::mutex> lock(mu);
      if (unshard_bound_ns(step, c.result, c.lower_bound_ns) / double(c.sequences) > plan_bar()) return;
    }
    ++planned;
    PlanRequest pr;
    pr.strategy = Strategy::Cost;
    pr.budget_bytes = req.budget_bytes;
    // The planner simulates the step a few hundred times: it plans on the step with the fewest
    // micro-batches that keeps its shape (pp for a pipeline: every stage reaches its steady state;
    // one without), whose costs scale with the micro-batches and whose peak is the same or close.
    // The set is then simulated with every micro-batch (dropping the last units taken while it is
    // over the budget); should it still not fit or not gain, the planner runs on the full step.
    const int few = std::max(1, c.plan.parallel.pp);
    // The chosen units, with the last ones the planner took dropped while the full step is over
    // the budget (a few micro-batches more can hold a little more memory at the peak).
    int kept = 0;
    auto try_set = [&](const PlanOutcome& o, SimResult& r, FsdpPlan& p, int max_drops) {
      std::vector<int> keep = o.unsharded_exec;
      for (int drop = 0; !keep.empty() && drop <= max_drops; ++drop, keep.pop_back()) {
        p = c.plan;
        p.unsharded.clear();
        for (int e : keep)
          for (int u : step.units[static_cast<std::size_t>(e)].members) p.unsharded.push_back(model.units[static_cast<std::size_t>(u)].name);
        r = simulate(compile_step(model, p, cluster), false);
        ++plan_sims[static_cast<std::size_t>(ci)];
        kept = static_cast<int>(keep.size());
        if (r.peak_bytes <= req.budget_bytes) return r.step_ns < c.result.step_ns;
      }
      return false;
    };
    FsdpPlan p;
    SimResult r;
    bool ok = false;
    PlanOutcome o;
    if (c.plan.gradient_accumulation > few) {
      FsdpPlan proxy = c.plan;
      proxy.gradient_accumulation = few;
      const CompiledStep ps = compile_step(model, proxy, cluster);
      // The budget less what the full step's peak holds over the proxy's (without an unshard set).
      PlanRequest pp = pr;
      pp.budget_bytes -= std::max<std::int64_t>(0, c.result.peak_bytes - simulate(ps, false).peak_bytes);
      ++plan_sims[static_cast<std::size_t>(ci)];
      o = plan_unshard(model, ps, cluster, pp);
      plan_sims[static_cast<std::size_t>(ci)] += o.simulations;
      ok = try_set(o, r, p, 4);
    }
    if (!ok) {
      o = plan_unshard(model, step, cluster, pr);
      plan_sims[static_cast<std::size_t>(ci)] += o.simulations;
      ok = try_set(o, r, p, 0);
    }
    if (!ok) return;
    c.plan = std::move(p);
    c.unsharded = kept;
    c.result = summary(std::move(r));
    fill_rates(c, shape, world);
    std::lock_guard<std::mutex> lock(mu);
    now[i] = double(c.result.step_ns) / double(c.sequences);
  });
  out.planned = planned.load();
  for (int n : plan_sims) out.planner_simulations += n;
  // Configurations past the planned ones that an unshard set might still have brought into the
  // list (their bound is under the final top-th time): the price of planning only k.
  {
    const double final_bar = nth_best();
    for (std::size_t ci = static_cast<std::size_t>(k); ci < cands.size(); ++ci) {
      const SearchConfig& c = all[cands[ci]];
      if (c.lower_bound_ns / double(c.sequences) > final_bar) continue;
      if (unshard_bound_ns(compile_step(model, c.plan, cluster), c.result, c.lower_bound_ns) / double(c.sequences) <= final_bar)
        ++out.unplanned_contenders;
    }
  }
  std::sort(all.begin(), all.end(), faster);
  all.resize(std::min<std::size_t>(all.size(), static_cast<std::size_t>(top)));
  out.configs = std::move(all);
  out.planner_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_plan).count();
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace ss::sim
