#include "profiler/sim/planner.h"

#include <algorithm>
#include <map>

#include "storage/errors.h"

namespace ss::sim {
namespace {

class Evaluator {
 public:
  Evaluator(const CompiledStep& base, const ClusterModel& c) : step_(base), cluster_(c), base_modes_(base.units.size()) {
    for (std::size_t e = 0; e < base.units.size(); ++e) base_modes_[e] = base.units[e].reshard;
  }
  // Simulates with `keep` units unsharded on top of the base plan.
  SimResult run(const std::vector<int>& keep) {
    for (int e : keep) set_reshard(step_, e, kKeepUnsharded, cluster_);
    SimResult r = simulate(step_);
    for (int e : keep) set_reshard(step_, e, base_modes_[static_cast<std::size_t>(e)], cluster_);
    ++count;
    return r;
  }
  int count = 0;

 private:
  CompiledStep step_;
  const ClusterModel& cluster_;
  std::vector<int> base_modes_;
};

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
  Evaluator ev(base, cluster);
  PlanOutcome out;
  out.baseline = ev.run({});
  const std::vector<int> cands = candidates(model, base, req);
  std::vector<int> keep;
  switch (req.strategy) {
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
    return simulate(s, true);
  }();
  out.unsharded_exec = keep;
  for (int e : keep)
    for (int u : base.units[static_cast<std::size_t>(e)].members) out.unsharded.push_back(model.units[static_cast<std::size_t>(u)].name);
  out.fits = out.result.peak_bytes <= req.budget_bytes;
  out.simulations = ev.count;
  return out;
}

}  // namespace ss::sim
