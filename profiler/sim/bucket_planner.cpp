#include "profiler/sim/bucket_planner.h"

#include <algorithm>

#include "storage/errors.h"

namespace ss::sim {
namespace {

using Group = std::vector<int>;  // model unit indices of one bucket, in the order compile_step formed them

bool under(const std::string& name, const std::string& root) { return name == root || name.rfind(root + ".", 0) == 0; }

// The model a unit belongs to in a process that ran two (a teacher beside its student): record
// names the second model's units under its class ("FSDPNet.layers.0", its root "FSDPNet").
std::string model_of(const SimModel& m, const std::string& name) {
  for (const auto& u : m.units)
    if (u.is_second_model_root() && under(name, u.name)) return u.name;
  return "";
}

// Two groups FSDP2 can gather as one: disjoint modules (fully_shard([a, b]) refuses a module
// inside another of the list), neither holding a root, of one model, trained alike.
bool mergeable(const SimModel& m, const Group& a, const Group& b) {
  for (int x : a)
    for (int y : b) {
      const auto& nx = m.units[static_cast<std::size_t>(x)];
      const auto& ny = m.units[static_cast<std::size_t>(y)];
      if (nx.is_root || ny.is_root || nx.frozen != ny.frozen || nx.frozen_in_trained_model != ny.frozen_in_trained_model) return false;
      if (under(ny.name, nx.name) || under(nx.name, ny.name) || model_of(m, nx.name) != model_of(m, ny.name)) return false;
    }
  return true;
}

std::vector<std::vector<std::string>> names_of(const SimModel& m, const std::vector<Group>& groups) {
  std::vector<std::vector<std::string>> out;
  for (const auto& g : groups) {
    if (g.size() < 2) continue;
    std::vector<std::string> names;
    for (int u : g) names.push_back(m.units[static_cast<std::size_t>(u)].name);
    out.push_back(std::move(names));
  }
  return out;
}

std::vector<Group> groups_in_forward_order(const CompiledStep& s) {
  std::vector<Group> out;
  for (int e : s.fwd_order) out.push_back(s.units[static_cast<std::size_t>(e)].members);
  return out;
}

}  // namespace

FsdpPlan with_buckets(FsdpPlan plan, const std::vector<std::vector<std::string>>& buckets) {
  plan.buckets = buckets;
  plan.bucket_cap_mb.clear();
  return plan;
}

std::vector<std::vector<std::string>> formed_buckets(const SimModel& model, const CompiledStep& step, const FsdpPlan& plan) {
  const auto named = [&](const std::string& n) {
    return std::find(plan.unsharded.begin(), plan.unsharded.end(), n) != plan.unsharded.end() || plan.reshard_degree.count(n) > 0;
  };
  std::vector<std::vector<std::string>> out;
  for (const auto& g : groups_in_forward_order(step)) {
    // A group the job shards itself stays the job's unless the plan changes it (names it, or
    // merges it with other units): its fully_shard([...]) call is in the job's code.
    if (g.size() == 1 && !named(model.units[static_cast<std::size_t>(g.front())].name)) continue;
    std::vector<std::string> names;
    for (int u : g) {
      const auto& unit = model.units[static_cast<std::size_t>(u)];
      names.push_back(unit.name);
      names.insert(names.end(), unit.group_members.begin(), unit.group_members.end());
    }
    if (names.size() >= 2) out.push_back(std::move(names));
  }
  return out;
}

BucketOutcome plan_buckets(const SimModel& model, const FsdpPlan& plan, const ClusterModel& cluster, std::int64_t budget) {
  BucketOutcome out;
  const CompiledStep base = compile_step(model, plan, cluster);
  out.before = simulate(base);
  ++out.simulations;
  std::vector<Group> groups = groups_in_forward_order(base);
  SimResult cur = out.before;
  auto fits = [&](const SimResult& r) { return budget <= 0 || r.peak_bytes <= budget; };
  for (bool merged = true; merged;) {
    merged = false;
    for (std::size_t i = 0; i + 1 < groups.size();) {
      if (!mergeable(model, groups[i], groups[i + 1])) {
        ++i;
        continue;
      }
      std::vector<Group> trial = groups;
      trial[i].insert(trial[i].end(), trial[i + 1].begin(), trial[i + 1].end());
      trial.erase(trial.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      SimResult r;
      try {
        r = simulate(compile_step(model, with_buckets(plan, names_of(model, trial)), cluster));
      } catch (const ProfileError&) {  // a pair the simulator does not bucket (experts and dense modules under EP)
        ++i;
        continue;
      }
      ++out.simulations;
      if (fits(r) && double(r.step_ns) <= double(cur.step_ns) * (1.0 - kMinBucketGain)) {
        groups = std::move(trial);
        cur = std::move(r);
        ++out.merges;
        merged = true;  // the grown bucket may take its next neighbour too: same i
      } else {
        ++i;
      }
    }
  }
  out.buckets = names_of(model, groups);
  out.after = cur;
  return out;
}

}  // namespace ss::sim
