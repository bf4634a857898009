#include "profiler/sim/repeated_calls.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "storage/interval_union.h"

namespace ss::sim {

int add_repeated_calls(SimModel& sm, const std::vector<UnitRange>& ranges, const std::vector<std::pair<TimeNs, TimeNs>>& steps,
                       int passes, bool counted, const std::vector<long>& fwd_gathers, const std::vector<long>& bwd_gathers) {
  const std::size_t n = sm.units.size();
  std::vector<std::pair<TimeNs, TimeNs>> root_backward;
  for (const auto& r : ranges)
    if (r.phase == RangePhase::Backward && sm.units[static_cast<std::size_t>(r.unit)].is_root) root_backward.emplace_back(r.start, r.end);
  root_backward = interval_union(std::move(root_backward));
  auto in_any = [](const std::vector<std::pair<TimeNs, TimeNs>>& spans, const UnitRange& r) {
    return std::any_of(spans.begin(), spans.end(), [&](const auto& s) { return r.start >= s.first && r.end <= s.second; });
  };
  std::vector<long> calls(n, 0);
  std::vector<TimeNs> call_end(n, std::numeric_limits<TimeNs>::min());  // ranges are sorted by start
  for (const auto& r : ranges) {
    const auto u = static_cast<std::size_t>(r.unit);
    if (!r.own || r.phase != RangePhase::Forward || r.start < call_end[u] || !in_any(steps, r) || in_any(root_backward, r)) continue;
    call_end[u] = r.end;  // a range nested in a call of the same module is that call
    ++calls[u];
  }
  int repeated = 0;
  for (std::size_t u = 0; u < n; ++u) {
    SimUnit& unit = sm.units[u];
    const bool reshards = !unit.is_root && unit.recorded_reshard != 0;
    long repeat = std::max(0L, std::lround(double(calls[u]) / double(std::max(1, passes))) - 1);
    if (counted && u < fwd_gathers.size()) {
      // A unit that reshards gathers once a call: gathers beyond them are the trainer's own
      // (torchtitan's chunked loss, a grouped unit's members), and fewer calls than gathers
      // mean some were not FSDP's calls.
      if (reshards) repeat = std::min(repeat, std::max(0L, fwd_gathers[u] - 1));
      unit.extra_fwd_gathers = static_cast<int>(std::max(0L, fwd_gathers[u] - (reshards ? 1 + repeat : 1)));
      unit.extra_bwd_gathers = unit.frozen ? 0 : static_cast<int>(std::max(0L, bwd_gathers[u] - (reshards ? 1 : 0)));
    }
    unit.repeat_fwd_calls = static_cast<int>(repeat);
    repeated += repeat > 0;
  }
  return repeated;
}

int trained_namesake(const SimModel& sm, std::size_t frozen) {
  const std::string& name = sm.units[frozen].name;
  for (std::size_t v = 0; v < sm.units.size(); ++v) {
    const std::string& n = sm.units[v].name;
    const bool same = name.empty() ? !n.empty() && n.find('.') == std::string::npos
                                   : n.size() > name.size() + 1 && n.compare(n.size() - name.size() - 1, std::string::npos, "." + name) == 0;
    if (v != frozen && !sm.units[v].frozen && same) return static_cast<int>(v);
  }
  return -1;
}

}  // namespace ss::sim
