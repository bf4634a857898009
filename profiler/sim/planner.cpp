#include "profiler/sim/planner.h"

#include <algorithm>
#include <map>

#include "storage/errors.h"

namespace ss::sim {
namespace {

class Evaluator {
 public:
  Evaluator(const CompiledStep& base, const ClusterModel& c)
      : step_(base), cluster_(c), base_modes_(base.units.size()), base_ckpt_(base.units.size()) {
    for (std::size_t e = 0; e < base.units.size(); ++e) base_modes_[e] = base.units[e].reshard, base_ckpt_[e] = base.units[e].checkpoint;
  }
  // Simulates with `keep` units unsharded and `ckpt` units checkpointed on top of the base plan.
  SimResult run(const std::vector<int>& keep, const std::vector<int>& ckpt = {}) {
    for (int e : keep) set_reshard(step_, e, kKeepUnsharded, cluster_);
    for (int e : ckpt) set_checkpoint(step_, e, Checkpoint::Full);
    SimResult r = simulate(step_);
    for (int e : keep) set_reshard(step_, e, base_modes_[static_cast<std::size_t>(e)], cluster_);
    for (int e : ckpt) set_checkpoint(step_, e, base_ckpt_[static_cast<std::size_t>(e)]);
    ++count;
    return r;
  }
  int count = 0;

 private:
  CompiledStep step_;
  const ClusterModel& cluster_;
  std::vector<int> base_modes_;
  std::vector<Checkpoint> base_ckpt_;
};

// Activation bytes a unit's full checkpointing frees (the planner's byte cost of not checkpointing it).
std::int64_t checkpoint_bytes(const CompiledStep& s, int e) {
  std::int64_t b = 0;
  for (const auto& sg : s.segments)
    if (sg.exec == e) b += sg.by_mode[0].saved - sg.by_mode[1].saved;
  return b;
}

// Checkpoint candidates: non-root units, not checkpointed by the base plan, that would save memory.
std::vector<int> checkpoint_candidates(const SimModel& model, const CompiledStep& s, const PlanRequest& req) {
  std::vector<int> out;
  for (int e : s.bwd_order) {
    const auto& u = s.units[static_cast<std::size_t>(e)];
    if (u.is_root || u.checkpoint != Checkpoint::None || !checkpointable(s, e)) continue;
    bool allowed = req.modules.empty();
    for (const auto& n : req.modules)
      for (int m : u.members) allowed = allowed || model.units[static_cast<std::size_t>(m)].name == n;
    if (allowed) out.push_back(e);
  }
  return out;
}

bool better(const SimResult& a, const SimResult& b) {  // faster, then smaller
  return a.step_ns != b.step_ns ? a.step_ns < b.step_ns : a.peak_bytes < b.peak_bytes;
}

// Candidates: resharded units with compute, in reverse forward order (late units first: they
// stay resident for the shortest time).
std::vector<int> candidates(const SimModel& model, const CompiledStep& s, const PlanRequest& req) {
  std::vector<char> allowed(s.units.size(), req.modules.empty() || req.strategy == Strategy::Manual ? 1 : 0);
  if (req.strategy != Strategy::Manual) {
    for (const auto& n : req.modules) {
      const int u = model.find_unit(n);
      if (u < 0) throw ProfileError(ProfileErrorKind::MalformedTable, "--modules: '" + n + "' is not an FSDP unit of the model");
      allowed[static_cast<std::size_t>(s.exec_of_unit[static_cast<std::size_t>(u)])] = 1;
    }
  }
  std::vector<int> out;
  for (auto it = s.bwd_order.begin(); it != s.bwd_order.end(); ++it) {
    const auto& e = s.units[static_cast<std::size_t>(*it)];
    if (allowed[static_cast<std::size_t>(*it)] && e.reshard != kKeepUnsharded && !e.is_root) out.push_back(*it);
  }
  return out;
}

std::vector<int> greedy(const SimModel& model, const CompiledStep& s, const std::vector<int>& cands, std::int64_t budget,
                        Evaluator& ev) {
  // Groups (a parent module such as layers.3 whose children are the units) in reverse forward
  // order: take the whole group if it fits, else split it into its units, else stop.
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  for (int e : cands) {
    const auto& u = model.units[static_cast<std::size_t>(s.units[static_cast<std::size_t>(e)].members.front())];
    const std::string g = u.group.empty() ? u.name : u.group;
    if (groups.empty() || groups.back().first != g) groups.push_back({g, {}});
    groups.back().second.push_back(e);
  }
  std::vector<int> keep;
  for (const auto& [name, members] : groups) {
    std::vector<int> trial = keep;
    trial.insert(trial.end(), members.begin(), members.end());
    if (ev.run(trial).peak_bytes <= budget) {
      keep = trial;
      continue;
    }
    bool any = false;
    if (members.size() > 1) {
      for (int e : members) {
        std::vector<int> t2 = keep;
        t2.push_back(e);
        if (ev.run(t2).peak_bytes <= budget) keep = t2, any = true;
      }
    }
    if (!any) break;  // the budget is reached
  }
  return keep;
}

std::vector<int> cost_based(const std::vector<int>& cands, const CompiledStep& s, std::int64_t budget, Evaluator& ev,
                            const SimResult& base) {
  // Repeatedly add the unit with the most step time saved per byte kept. Lazy evaluation: a
  // unit's last measured gain is an estimate until it is re-simulated at the top of the queue.
  std::vector<int> keep;
  SimResult cur = base;
  struct Cand { int e; double score; bool fresh; };
  std::vector<Cand> q;
  for (int e : cands) q.push_back({e, 1e300, false});
  while (!q.empty()) {
    // Stable: equal gains keep reverse forward order (late units stay resident for less time).
    std::stable_sort(q.begin(), q.end(), [](const Cand& a, const Cand& b) { return a.score > b.score; });
    Cand& top = q.front();
    if (top.score <= 0) break;
    if (!top.fresh) {
      std::vector<int> trial = keep;
      trial.push_back(top.e);
      SimResult r = ev.run(trial);
      const double saved = double(cur.step_ns - r.step_ns);
      const double bytes = double(std::max<std::int64_t>(1, s.units[static_cast<std::size_t>(top.e)].ag_bytes));
      top.score = r.peak_bytes <= budget ? saved / bytes : -1;
      top.fresh = true;
      continue;
    }
    keep.push_back(top.e);
    cur = ev.run(keep);
    q.erase(q.begin());
    for (auto& c : q) c.fresh = false;
  }
  return keep;
}

// Joint cost strategy: start with every checkpoint candidate checkpointed (the least memory), then
// repeatedly take the move -- keep a unit unsharded, or stop checkpointing one -- with the most
// step time saved per byte it holds, while it fits. Both ways of spending memory compete in one
// queue, so the budget goes where it buys the most time.
struct Joint {
  std::vector<int> keep, ckpt;
};
Joint cost_joint(const std::vector<int>& cands, const std::vector<int>& ck_cands, const CompiledStep& s, std::int64_t budget,
                 Evaluator& ev) {
  Joint j{{}, ck_cands};
  SimResult cur = ev.run(j.keep, j.ckpt);
  if (cur.peak_bytes > budget) return j;  // nothing fits: report the least-memory plan
  struct Move { int e; bool unshard; double score; bool fresh; };
  std::vector<Move> q;
  for (int e : cands) q.push_back({e, true, 1e300, false});
  for (int e : ck_cands) q.push_back({e, false, 1e300, false});
  auto apply = [&](Joint x, const Move& m) {
    if (m.unshard) x.keep.push_back(m.e);
    else x.ckpt.erase(std::find(x.ckpt.begin(), x.ckpt.end(), m.e));
    return x;
  };
  while (!q.empty()) {
    std::stable_sort(q.begin(), q.end(), [](const Move& a, const Move& b) { return a.score > b.score; });
    Move& top = q.front();
    // A stale gain is re-measured before giving up: a move can start paying only after another
    // (a recompute hidden behind an exposed all-gather saves nothing until the all-gather goes).
    if (top.score <= 0 && top.fresh) break;
    if (!top.fresh) {
      const Joint t = apply(j, top);
      SimResult r = ev.run(t.keep, t.ckpt);
      const double saved = double(cur.step_ns - r.step_ns);
      const double bytes = double(std::max<std::int64_t>(
          1, top.unshard ? s.units[static_cast<std::size_t>(top.e)].ag_bytes : checkpoint_bytes(s, top.e)));
      top.score = r.peak_bytes <= budget ? saved / bytes : -1;
      top.fresh = true;
      continue;
    }
    j = apply(j, top);
    cur = ev.run(j.keep, j.ckpt);
    q.erase(q.begin());
    for (auto& c : q) c.fresh = false;
  }
  return j;
}

// Joint exact: every subset of unshard candidates x every subset of checkpoint candidates.
Joint exact_joint(const std::vector<int>& cands, const std::vector<int>& ck_cands, std::int64_t budget, Evaluator& ev, int limit) {
  const std::size_t n = cands.size() + ck_cands.size();
  if (static_cast<int>(n) > limit)
    throw ProfileError(ProfileErrorKind::MalformedTable,
                       "the exact strategy is limited to " + std::to_string(limit) + " choices (this model has " +
                           std::to_string(cands.size()) + " unshard and " + std::to_string(ck_cands.size()) +
                           " checkpoint candidates); restrict them with --modules or use cost");
  Joint best_j;
  SimResult best;
  bool have = false;
  for (std::uint64_t mask = 0; mask < (std::uint64_t(1) << n); ++mask) {
    Joint t;
    for (std::size_t i = 0; i < n; ++i)
      if (mask >> i & 1) (i < cands.size() ? t.keep.push_back(cands[i]) : t.ckpt.push_back(ck_cands[i - cands.size()]));
    SimResult r = ev.run(t.keep, t.ckpt);
    if (r.peak_bytes > budget) continue;
    if (!have || better(r, best)) best = std::move(r), best_j = t, have = true;
  }
  return best_j;
}

std::vector<int> exact(const std::vector<int>& cands, std::int64_t budget, Evaluator& ev, int limit) {
  if (static_cast<int>(cands.size()) > limit)
    throw ProfileError(ProfileErrorKind::MalformedTable,
                       "the exact strategy is limited to " + std::to_string(limit) + " candidate units (this model has " +
                           std::to_string(cands.size()) + "); restrict them with --modules or use greedy/cost");
  std::vector<int> best_keep;
  SimResult best;
  bool have = false;
  const std::uint64_t n = std::uint64_t(1) << cands.size();
  for (std::uint64_t mask = 0; mask < n; ++mask) {
    std::vector<int> keep;
    for (std::size_t i = 0; i < cands.size(); ++i)
      if (mask >> i & 1) keep.push_back(cands[i]);
    SimResult r = ev.run(keep);
    if (r.peak_bytes > budget) continue;
    if (!have || better(r, best)) best = std::move(r), best_keep = keep, have = true;
  }
  return best_keep;
}

}  // namespace

PlanOutcome plan_unshard(const SimModel& model, const CompiledStep& base, const ClusterModel& cluster, const PlanRequest& req) {
  if (req.offload_if_needed && base.offload == Offload::None) {
    // Offload only when nothing else fits: optimizer states first (no per-layer traffic), then
    // FSDP2's CPUOffloadPolicy.
    PlanRequest inner = req;
    inner.offload_if_needed = false;
    PlanOutcome o = plan_unshard(model, base, cluster, inner);
    for (Offload mode : {Offload::Optimizer, Offload::Cpu}) {
      if (o.fits) break;
      CompiledStep b = base;
      b.offload = mode;
      const int before = o.simulations;
      const SimResult no_offload = o.baseline;
      o = plan_unshard(model, b, cluster, inner);
      o.simulations += before;
      o.baseline = no_offload;
    }
    return o;
  }
  if (req.checkpoint && (req.strategy == Strategy::Greedy || req.strategy == Strategy::Manual))
    throw ProfileError(ProfileErrorKind::MalformedTable,
                       "planning activation checkpointing needs --strategy cost or exact (greedy and manual plan unsharding only)");
  Evaluator ev(base, cluster);
  PlanOutcome out;
  out.offload = base.offload;
  out.baseline = ev.run({});
  const std::vector<int> cands = candidates(model, base, req);
  std::vector<int> keep, ckpt;
  if (req.checkpoint) {
    const std::vector<int> ck = checkpoint_candidates(model, base, req);
    const Joint j = req.strategy == Strategy::Cost ? cost_joint(cands, ck, base, req.budget_bytes, ev)
                                                   : exact_joint(cands, ck, req.budget_bytes, ev, req.exact_max_candidates);
    keep = j.keep, ckpt = j.ckpt;
  } else switch (req.strategy) {
    case Strategy::Manual:
      for (const auto& n : req.modules) {
        const int u = model.find_unit(n);
        if (u < 0) throw ProfileError(ProfileErrorKind::MalformedTable, "--modules: '" + n + "' is not an FSDP unit of the model");
        const int e = base.exec_of_unit[static_cast<std::size_t>(u)];
        if (std::find(keep.begin(), keep.end(), e) == keep.end()) keep.push_back(e);
      }
      break;
    case Strategy::Greedy: keep = greedy(model, base, cands, req.budget_bytes, ev); break;
    case Strategy::Cost: keep = cost_based(cands, base, req.budget_bytes, ev, out.baseline); break;
    case Strategy::Exact: keep = exact(cands, req.budget_bytes, ev, req.exact_max_candidates); break;
  }
  out.result = [&] {
    CompiledStep s = base;
    for (int e : keep) set_reshard(s, e, kKeepUnsharded, cluster);
    for (int e : ckpt) set_checkpoint(s, e, Checkpoint::Full);
    return simulate(s, true);
  }();
  out.unsharded_exec = keep;
  out.checkpoint_exec = ckpt;
  for (int e : ckpt)
    for (int u : base.units[static_cast<std::size_t>(e)].members) out.checkpointed.push_back(model.units[static_cast<std::size_t>(u)].name);
  for (int e : keep)
    for (int u : base.units[static_cast<std::size_t>(e)].members) out.unsharded.push_back(model.units[static_cast<std::size_t>(u)].name);
  out.fits = out.result.peak_bytes <= req.budget_bytes;
  out.simulations = ev.count;
  return out;
}

}  // namespace ss::sim
