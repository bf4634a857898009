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
// freed in that unit's backward) marks where the rerun stops, at the end of the operator that
// made it. The share is the compute from the unit's pre-forward end to there over the unit's
// forward compute. CPU profiles only: their operators and allocations share one clock; a GPU
// profile's allocations are host times with no launch to tie them to kernels (share stays 1).
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

// One unit in one step: its forward and backward spans (module ranges), where its pre-forward
// ends, and the latest allocation of its forward that its backward freed.
struct UnitStep {
  TimeNs fwd_lo = std::numeric_limits<TimeNs>::max(), fwd_hi = kNone;
  TimeNs bwd_lo = std::numeric_limits<TimeNs>::max(), bwd_hi = kNone;
  TimeNs pre_end = kNone;
  TimeNs last_saved = kNone;
  TimeNs rerun_from() const { return pre_end != kNone && pre_end >= fwd_lo && pre_end <= fwd_hi ? pre_end : fwd_lo; }
  bool in_fwd(TimeNs t) const { return fwd_hi != kNone && t >= rerun_from() && t <= fwd_hi; }
  bool in_bwd(TimeNs t) const { return bwd_hi != kNone && t >= bwd_lo && t <= bwd_hi; }
};

}  // namespace

void add_rerun_share_from_profile(ProfileInput& in, const std::string& path) {
  if (in.step_windows.empty() || !is_cpu_device(in.gpu_name)) return;
  sql::Db db = open_profile_readonly(path);
  const std::map<RowId, int> unit_of(in.unit_of_module.begin(), in.unit_of_module.end());
  const std::size_t nu = in.model.units.size();
  std::vector<UnitStep> at(in.step_windows.size() * nu);
  auto slot = [&](RowId module, TimeNs t) -> UnitStep* {
    const auto u = unit_of.find(module);
    const auto k = interval_holding(in.step_windows, t);
    if (u == unit_of.end() || k < 0 || in.model.units[static_cast<std::size_t>(u->second)].is_root) return nullptr;
    return &at[static_cast<std::size_t>(k) * nu + static_cast<std::size_t>(u->second)];
  };

  {
    sql::Stmt r(db.get(),
                "SELECT r.module_id, r.kind, r.phase, r.start_ns, r.start_ns + r.duration_ns, s.value FROM ranges r "
                "JOIN strings s ON s.id = r.name_id WHERE r.rank = ?1 AND r.module_id IS NOT NULL AND r.kind IN (?2, ?3) "
                "AND r.phase IN (?4, ?5)");
    r.bind(1, in.rank);
    r.bind(2, static_cast<int>(RangeKind::Module));
    r.bind(3, static_cast<int>(RangeKind::Fsdp));
    r.bind(4, static_cast<int>(RangePhase::Forward));
    r.bind(5, static_cast<int>(RangePhase::Backward));
    while (r.step()) {
      UnitStep* us = slot(r.col_int(0), r.col_int(3));
      if (!us) continue;
      const TimeNs a = r.col_int(3), b = r.col_int(4);
      const bool forward = r.col_int(2) == static_cast<int>(RangePhase::Forward);
      if (r.col_int(1) == static_cast<int>(RangeKind::Fsdp)) {
        if (forward && r.col_text(5).rfind("FSDP::pre_forward", 0) == 0) us->pre_end = std::max(us->pre_end, b);
      } else if (forward) {
        us->fwd_lo = std::min(us->fwd_lo, a), us->fwd_hi = std::max(us->fwd_hi, b);
      } else {
        us->bwd_lo = std::min(us->bwd_lo, a), us->bwd_hi = std::max(us->bwd_hi, b);
      }
    }
  }

  {
    // Saved activations: made in a unit's forward, freed in its own backward (paired by address).
    struct Open { UnitStep* us; TimeNs t; };
    std::map<std::int64_t, Open> open;
    sql::Stmt st(db.get(), "SELECT time_ns, address, bytes, module_id FROM memory_events WHERE rank = ?1 AND category = ?2 "
                           "AND address IS NOT NULL ORDER BY time_ns, id");
    st.bind(1, in.rank);
    st.bind(2, static_cast<int>(MemoryCategory::Activation));
    while (st.step()) {
      const TimeNs t = st.col_int(0);
      const std::int64_t addr = st.col_int(1);
      if (st.col_int(2) > 0) {
        UnitStep* us = st.col_null(3) ? nullptr : slot(st.col_int(3), t);
        if (us && us->in_fwd(t)) open[addr] = {us, t};
        else open.erase(addr);
      } else if (auto it = open.find(addr); it != open.end()) {
        if (it->second.us->in_bwd(t)) it->second.us->last_saved = std::max(it->second.us->last_saved, it->second.t);
        open.erase(it);
      }
    }
  }

  // The training thread's operators: where the rerun stops is the end of the one that made the
  // last saved tensor (top-level operators do not nest on a CPU profile's compute lane).
  std::vector<TimeInterval> ops;
  {
    sql::Stmt k(db.get(), "SELECT start_ns, start_ns + duration_ns FROM kernels WHERE rank = ?1 AND category != ?2");
    k.bind(1, in.rank);
    k.bind(2, static_cast<int>(KernelCategory::Collective));
    while (k.step()) ops.emplace_back(k.col_int(0), k.col_int(1));
  }
  std::sort(ops.begin(), ops.end());
  const std::vector<TimeInterval> busy = interval_union(ops);
  auto end_of_op_at = [&](TimeNs t) {
    auto it = std::upper_bound(ops.begin(), ops.end(), TimeInterval{t, std::numeric_limits<TimeNs>::max()});
    return it != ops.begin() && std::prev(it)->second > t ? std::prev(it)->second : t;
  };

  std::vector<double> rerun(nu, 0), forward(nu, 0);
  for (std::size_t i = 0; i < at.size(); ++i) {
    const UnitStep& us = at[i];
    if (us.last_saved == kNone) continue;  // nothing saved, or no backward seen: unknown
    rerun[i % nu] += double(busy_in(busy, us.rerun_from(), end_of_op_at(us.last_saved)));
    forward[i % nu] += double(busy_in(busy, us.fwd_lo, us.fwd_hi));
  }
  for (auto& seg : in.model.segments) {
    const auto u = static_cast<std::size_t>(seg.unit);
    if (forward[u] > 0) seg.rerun_share = std::clamp(rerun[u] / forward[u], 0.0, 1.0);
  }
}

}  // namespace ss::sim
