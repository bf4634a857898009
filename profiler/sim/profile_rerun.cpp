// How much of a unit's forward a full-checkpointing rerun repeats, measured on a profile.
//
// torch.utils.checkpoint (non-reentrant, what checkpoint_wrapper and FSDP2 trainers use) reruns a
// checkpointed forward in backward only until the last tensor the backward needs is rebuilt
// (early stop, on by default): the ops after it do not run again. A block that ends in a
// projection and a residual add (mlp: norm, up, gelu, down, add; llama: ... w2, add) saves
// nothing after its last activation function, so its last projection is skipped, about half of
// mlp's forward. Measured on mlp (CPU, 2026-11-27): the rerun of layers.2 is its norm, up and
// gelu (20.9 ms) of a 41 ms forward; the model that reran all of it overshot the checkpointed
// step by +14.6 %.
//
// From the profile: in each step, the last activation a unit's forward allocates that its own
// backward frees (a saved tensor; the block's output lives on as the next unit's input and is
// freed in that unit's backward) marks where the rerun stops. The share is the compute of the
// rerun over the unit's forward compute:
// - CPU profiles (operators and allocations on one clock): from the pre-forward's end to the end
//   of the operator that made that tensor.
// - GPU profiles (allocations and module ranges are host times, kernels GPU times, and no launch
//   time ties one to the other): from the first kernel of the unit's first sub-module to the
//   first kernel of the sub-module whose forward starts after that allocation (llama: w2), found
//   by the kernels' module. A unit without such a sub-module reruns all of its forward.
#include <algorithm>
#include <limits>
#include <map>

#include "profiler/sim/profile_extract.h"
#include "storage/cpu_device.h"
#include "storage/interval_union.h"
#include "storage/profile_reader.h"
#include "storage/sqlite_handle.h"

namespace ss::sim {
namespace {

constexpr TimeNs kNone = std::numeric_limits<TimeNs>::min();
constexpr TimeNs kMax = std::numeric_limits<TimeNs>::max();

// One unit in one step: its forward and backward spans (module ranges, host times), where its
// pre-forward ends, its sub-modules' forward ranges, and the latest allocation of its forward that
// its backward freed. GPU: the span of its forward kernels and where the rerun starts and stops.
struct UnitStep {
  TimeNs fwd_lo = kMax, fwd_hi = kNone;
  TimeNs bwd_lo = kMax, bwd_hi = kNone;
  TimeNs pre_end = kNone;
  TimeNs last_saved = kNone;
  std::vector<std::pair<TimeNs, RowId>> sub_starts;  // (start, module) of sub-module forward ranges
  RowId stop_module = kNoRow;                        // GPU: the sub-module the rerun does not reach
  TimeNs k_lo = kMax, k_hi = kNone, k_sub = kMax, k_stop = kMax;  // GPU kernel times
  TimeNs rerun_from() const { return pre_end != kNone && pre_end >= fwd_lo && pre_end <= fwd_hi ? pre_end : fwd_lo; }
  bool in_fwd(TimeNs t) const { return fwd_hi != kNone && t >= rerun_from() && t <= fwd_hi; }
  bool in_bwd(TimeNs t) const { return bwd_hi != kNone && t >= bwd_lo && t <= bwd_hi; }
};

bool in_subtree(const std::string& fqn, const std::string& root) {
  return fqn == root || (fqn.size() > root.size() && fqn.compare(0, root.size(), root) == 0 && fqn[root.size()] == '.');
}

}  // namespace

void add_rerun_share_from_profile(ProfileInput& in, const std::string& path) {
  if (in.pass_windows.empty()) return;
  const bool cpu = is_cpu_device(in.gpu_name);
  sql::Db db = open_profile_readonly(path);
  const std::map<RowId, int> unit_of(in.unit_of_module.begin(), in.unit_of_module.end());
  const std::size_t nu = in.model.units.size();
  std::map<RowId, std::string> fqn;
  {
    sql::Stmt m(db.get(), "SELECT id, fqn FROM modules");
    while (m.step()) fqn[m.col_int(0)] = m.col_text(1);
  }
  auto fqn_of = [&](RowId id) -> const std::string& {
    static const std::string none;
    const auto it = fqn.find(id);
    return it == fqn.end() ? none : it->second;
  };
  std::vector<UnitStep> at(in.pass_windows.size() * nu);
  auto unit_step = [&](RowId module, TimeNs t) -> std::pair<UnitStep*, int> {
    const auto u = unit_of.find(module);
    const auto k = interval_holding(in.pass_windows, t);
    if (u == unit_of.end() || k < 0 || in.model.units[static_cast<std::size_t>(u->second)].is_root) return {nullptr, -1};
    return {&at[static_cast<std::size_t>(k) * nu + static_cast<std::size_t>(u->second)], u->second};
  };

  {
    sql::Stmt r = module_and_fsdp_ranges(db, in.rank, RangePhase::Forward, RangePhase::Backward);
    while (r.step()) {
      const RowId module = r.col_int(0);
      const auto [us, u] = unit_step(module, r.col_int(3));
      if (!us) continue;
      const TimeNs a = r.col_int(3), b = r.col_int(4);
      const bool forward = r.col_int(2) == static_cast<int>(RangePhase::Forward);
      if (r.col_int(1) == static_cast<int>(RangeKind::Fsdp)) {
        if (forward && r.col_text(5).rfind("FSDP::pre_forward", 0) == 0) us->pre_end = std::max(us->pre_end, b);
      } else if (forward) {
        us->fwd_lo = std::min(us->fwd_lo, a), us->fwd_hi = std::max(us->fwd_hi, b);
        if (!cpu && fqn_of(module) != in.model.units[static_cast<std::size_t>(u)].name) us->sub_starts.emplace_back(a, module);
      } else {
        us->bwd_lo = std::min(us->bwd_lo, a), us->bwd_hi = std::max(us->bwd_hi, b);
      }
    }
  }

  {
    // Saved activations: made in a unit's forward, freed in its own backward (paired by address).
    struct Open { UnitStep* us; TimeNs t; };
    std::map<std::int64_t, Open> open;
    sql::Stmt st = activation_events_in_order(db, in.rank);
    while (st.step()) {
      const TimeNs t = st.col_int(0);
      const std::int64_t addr = st.col_int(1);
      if (st.col_int(2) > 0) {
        UnitStep* us = st.col_null(3) ? nullptr : unit_step(st.col_int(3), t).first;
        if (us && us->in_fwd(t)) open[addr] = {us, t};
        else open.erase(addr);
      } else if (auto it = open.find(addr); it != open.end()) {
        if (it->second.us->in_bwd(t)) it->second.us->last_saved = std::max(it->second.us->last_saved, it->second.t);
        open.erase(it);
      }
    }
  }

  // Nothing saved anywhere (no activation events: a profile recorded without memory): every unit
  // keeps 1, and the kernels need not be read.
  if (std::none_of(at.begin(), at.end(), [](const UnitStep& us) { return us.last_saved != kNone; })) return;

  // Compute: every non-collective kernel of the rank (a CPU profile's operators on the training
  // thread). GPU: each unit's forward kernels (by module; started after its forward began on the
  // host and before its backward did), the first of its sub-modules', and the first of the
  // sub-module the rerun does not reach.
  std::vector<TimeInterval> ops;
  {
    for (auto& us : at) {
      if (us.last_saved == kNone) continue;
      std::sort(us.sub_starts.begin(), us.sub_starts.end());
      const auto next = std::upper_bound(us.sub_starts.begin(), us.sub_starts.end(), us.last_saved,
                                         [](TimeNs t, const std::pair<TimeNs, RowId>& s) { return t < s.first; });
      if (next != us.sub_starts.end()) us.stop_module = next->second;
    }
    sql::Stmt k(db.get(), "SELECT start_ns, start_ns + duration_ns, module_id FROM kernels WHERE rank = ?1 AND category != ?2");
    k.bind(1, in.rank);
    k.bind(2, static_cast<int>(KernelCategory::Collective));
    while (k.step()) {
      const TimeNs a = k.col_int(0), b = k.col_int(1);
      ops.emplace_back(a, b);
      if (cpu || k.col_null(2)) continue;
      const RowId module = k.col_int(2);
      const auto [us, u] = unit_step(module, a);
      if (!us || us->last_saved == kNone || a < us->fwd_lo || a >= us->bwd_lo) continue;
      us->k_lo = std::min(us->k_lo, a), us->k_hi = std::max(us->k_hi, b);
      const std::string& f = fqn_of(module);
      if (f != in.model.units[static_cast<std::size_t>(u)].name) us->k_sub = std::min(us->k_sub, a);
      if (us->stop_module != kNoRow && in_subtree(f, fqn_of(us->stop_module))) us->k_stop = std::min(us->k_stop, a);
    }
  }
  std::sort(ops.begin(), ops.end());
  const std::vector<TimeInterval> busy = interval_union(ops);
  // CPU: where the rerun stops is the end of the operator that made the last saved tensor
  // (top-level operators do not nest on a CPU profile's compute lane).
  auto end_of_op_at = [&](TimeNs t) {
    auto it = std::upper_bound(ops.begin(), ops.end(), TimeInterval{t, kMax});
    return it != ops.begin() && std::prev(it)->second > t ? std::prev(it)->second : t;
  };

  std::vector<double> rerun(nu, 0), forward(nu, 0);
  for (std::size_t i = 0; i < at.size(); ++i) {
    const UnitStep& us = at[i];
    if (us.last_saved == kNone) continue;  // nothing saved, or no backward seen: unknown
    if (cpu) {
      rerun[i % nu] += double(busy_in(busy, us.rerun_from(), end_of_op_at(us.last_saved)));
      forward[i % nu] += double(busy_in(busy, us.fwd_lo, us.fwd_hi));
    } else if (us.k_hi != kNone) {
      const TimeNs from = us.k_sub != kMax ? us.k_sub : us.k_lo, to = std::min(us.k_stop, us.k_hi);
      rerun[i % nu] += double(busy_in(busy, from, std::max(from, to)));
      forward[i % nu] += double(busy_in(busy, us.k_lo, us.k_hi));
    }
  }
  for (auto& seg : in.model.segments) {
    const auto u = static_cast<std::size_t>(seg.unit);
    if (forward[u] > 0) seg.rerun_share = std::clamp(rerun[u] / forward[u], 0.0, 1.0);
  }
}

}  // namespace ss::sim
