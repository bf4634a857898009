#include "profiler/collector/core/rank_phases.h"

#include <algorithm>

namespace ss::collector {

MemContext RankPhases::context_at(TimeNs t) const {
  if (interval_holding(optimizer, t) >= 0) return MemContext::Optimizer;
  if (interval_holding(recompute, t) >= 0) return MemContext::Recompute;
  return MemContext::None;
}

RankPhases read_rank_phases(sql::Db& db, TimeNs shift) {
  RankPhases r;
  {
    sql::Stmt st(db.get(), "SELECT start_ns, start_ns + duration_ns FROM steps ORDER BY start_ns");
    while (st.step()) r.steps.push_back({st.col_int(0) + shift, 0, 0, st.col_int(1) + shift, {}});
  }
  std::vector<TimeInterval> optimizer, recompute;
  std::vector<TimeNs> backward, forward_modules;
  {
    sql::Stmt st(db.get(), "SELECT start_ns, start_ns + duration_ns, phase, kind FROM ranges WHERE phase IN (2, 3, 4) "
                           "OR (phase = 1 AND kind = 1) ORDER BY start_ns");
    while (st.step()) {
      const TimeNs a = st.col_int(0) + shift, b = st.col_int(1) + shift;
      const auto ph = static_cast<RangePhase>(st.col_int(2));
      if (ph == RangePhase::Forward) forward_modules.push_back(a);
      else if (ph == RangePhase::Backward) backward.push_back(a);
      else (ph == RangePhase::Optimizer ? optimizer : recompute).emplace_back(a, b);
    }
  }
  auto first_in = [](const auto& v, TimeNs a, TimeNs b, auto key) {
    TimeNs best = b;
    for (const auto& x : v)
      if (key(x) >= a && key(x) < b) best = std::min(best, key(x));
    return best;
  };
  for (auto& s : r.steps) {
    s.optimizer = first_in(optimizer, s.start, s.end, [](const auto& x) { return x.first; });
    s.backward = std::min(s.optimizer, first_in(backward, s.start, s.end, [](TimeNs t) { return t; }));
  }
  find_later_passes(r.steps, forward_modules, backward);
  r.optimizer = interval_union(std::move(optimizer));
  r.recompute = interval_union(std::move(recompute));
  return r;
}

}  // namespace ss::collector
