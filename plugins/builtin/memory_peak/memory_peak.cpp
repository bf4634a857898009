// Memory peak attribution per rank: the peak of the allocated-bytes counter inside the window
// (first time it is reached), the module range running at that instant (innermost module range
// on the rank's CPU lanes), the module whose allocation reached it, and the live bytes at the
// peak by category and by owning module (memory events replayed up to the peak with SQL).
#include <algorithm>
#include <cstdio>
#include <map>

#include "plugins/api/plugin_sdk.h"
#include "plugins/builtin/common/profile_access.h"
#include "storage/units.h"

namespace {

using namespace ss::analysis;

std::string text_of(const ss_value& v, const char* fallback) {
  return v.type == SS_VALUE_TEXT && v.s && *v.s ? std::string(v.s) : std::string(fallback);
}

void run(const ss::plugin::Host& host) {
  ProfileAccess p(host);
  const std::int64_t lo = host.from(), hi = host.to();
  host.table("peaks", {"rank", "peak_bytes", "peak_time_ns", "gpu_memory_bytes", "peak_pct_of_capacity",
                       "module_running", "allocating_module"});
  struct Live {
    int rank;
    std::map<std::string, std::int64_t> by_category, by_module;
  };
  std::vector<Live> lives;
  for (const auto& r : host.ranks()) {
    std::size_t peak = r.memory_count;
    for (std::size_t i = 0; i < r.memory_count; ++i) {
      if (r.memory[i].time < lo || r.memory[i].time > hi) continue;
      if (peak == r.memory_count || r.memory[i].value > r.memory[peak].value) peak = i;
    }
    if (peak == r.memory_count) continue;
    const std::int64_t t = r.memory[peak].time;
    const ss_range_event* running = p.innermost_range(r.rank, t, 1u << SS_RANGE_MODULE, true);
    Live live{r.rank, {}, {}};
    std::string allocating = "(unattributed)";
    std::size_t n = 0;
    host.query("SELECT category, bytes, module FROM memory_view WHERE rank = " + std::to_string(r.rank) +
                   " ORDER BY time_ns, id LIMIT " + std::to_string(peak + 1),
               [&](std::span<const ss_value> row) {
                 const std::string cat = text_of(row[0], "unknown");
                 const std::string mod = text_of(row[2], "(unattributed)");
                 live.by_category[cat] += row[1].i;
                 live.by_module[mod] += row[1].i;
                 if (++n == peak + 1) allocating = mod;
               });
    // A rank without a known capacity (a CPU rank, a trace without device properties) has no
    // capacity and no share of it: NULL cells ("—"), not "0 B" and "0.0 %".
    const bool capacity = r.gpu_memory_bytes > 0;
    const double pct = capacity ? 100.0 * double(r.memory[peak].value) / double(r.gpu_memory_bytes) : 0.0;
    host.row({r.rank, r.memory[peak].value, t, capacity ? ss::plugin::Cell(r.gpu_memory_bytes) : ss::plugin::Cell(),
              capacity ? ss::plugin::Cell(pct) : ss::plugin::Cell(), running ? p.module_name(running->module) : std::string("(none)"),
              allocating});
    host.marker(t, t, r.rank, "memory peak");
    std::string msg = "rank " + std::to_string(r.rank) + " peaks at " + ss::format_bytes(r.memory[peak].value);
    if (capacity) msg += " (" + std::to_string(static_cast<int>(pct)) + "% of the GPU)";
    msg += " during " + (running ? p.module_name(running->module) : std::string("no module range"));
    host.finding(pct > 90 ? SS_SEVERITY_WARNING : SS_SEVERITY_INFO, msg, t, t, r.rank);
    lives.push_back(std::move(live));
  }
  if (lives.empty()) host.finding(SS_SEVERITY_INFO, "no memory events in the selection: the profile records no allocations");
  host.table("categories_at_peak", {"rank", "category", "bytes"});
  for (const auto& l : lives)
    for (const auto& [cat, b] : l.by_category)
      if (b != 0) host.row({l.rank, cat, b});
  host.table("modules_at_peak", {"rank", "module", "bytes"});
  for (const auto& l : lives) {
    std::vector<std::pair<std::string, std::int64_t>> v(l.by_module.begin(), l.by_module.end());
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    for (std::size_t i = 0; i < v.size() && i < 10; ++i)
      if (v[i].second != 0) host.row({l.rank, v[i].first, v[i].second});
  }
}

}  // namespace

SS_DEFINE_PLUGIN("memory-peak", "Memory peak attribution",
                 "Peak allocated bytes per rank, the module running at the peak, and live bytes by category and "
                 "module at the peak.",
                 &run)
