// Communication-computation overlap and exposed collective time, per FSDP unit and per rank.
// A collective's exposed time is the part of it during which no compute kernel runs on its
// rank: exposed = duration - |collective ∩ union(compute kernels of the rank)|. Collectives are
// attributed to modules (common/collectives.cpp) and modules to their FSDP unit.
// Per-unit sums add durations of single collectives; the per-rank table uses the union of all
// collectives of the rank, so concurrent collectives count once there.
#include <algorithm>
#include <cstdio>
#include <map>

#include "plugins/api/plugin_sdk.h"
#include "plugins/builtin/common/profile_access.h"

namespace {

using namespace ss::analysis;

double pct(std::int64_t part, std::int64_t whole) { return whole > 0 ? 100.0 * double(part) / double(whole) : 0.0; }

// Point-to-point sends and receives (a pipeline's stages) are no unit's collective: their time is
// mostly waiting for the peer stage (seconds on torchtitan's pipeline over gloo, which went to
// whichever unit ran last). They get a row of their own.
constexpr int kPointToPoint = -2;
int unit_key(const ProfileAccess& p, const CommItem& c) { return is_point_to_point(c.type) ? kPointToPoint : p.unit_of(c.module); }
std::string unit_name(const ProfileAccess& p, int unit) {
  return unit == kPointToPoint ? "(send / recv)" : p.module_name(unit);
}

struct UnitTotals {
  std::int64_t count = 0, total = 0, overlapped = 0, exposed = 0;
  std::int64_t ag_exposed = 0, rs_exposed = 0, other_exposed = 0;
  const CommItem* worst = nullptr;  // most exposed collective, to jump to
  std::int64_t worst_exposed = -1;
};

void run(const ss::plugin::Host& host) {
  ProfileAccess p(host);
  const std::int64_t lo = host.from(), hi = host.to();
  std::vector<CommItem> items = collect_collectives(p);

  std::map<int, UnitTotals> units;  // unit module index (-1 unattributed)
  std::vector<std::pair<std::int64_t, const CommItem*>> exposed_items;
  for (const auto& c : items) {
    const RankActivity* r = p.rank(c.rank);
    Interval t{std::max(c.time.start, lo), std::min(c.time.end, hi)};
    const std::int64_t overlapped = r ? covered_length(r->compute, t) : 0;
    const std::int64_t exposed = t.length() - overlapped;
    UnitTotals& u = units[unit_key(p, c)];
    ++u.count;
    u.total += t.length();
    u.overlapped += overlapped;
    u.exposed += exposed;
    (c.type == 2 ? u.ag_exposed : c.type == 3 ? u.rs_exposed : u.other_exposed) += exposed;
    if (exposed > u.worst_exposed) u.worst_exposed = exposed, u.worst = &c;
    exposed_items.emplace_back(exposed, &c);
  }

  host.table("per_unit", {"fsdp_unit", "collectives", "collective_ns", "overlapped_ns", "exposed_ns", "overlap_pct",
                          "all_gather_exposed_ns", "reduce_scatter_exposed_ns", "other_exposed_ns"});
  std::vector<std::pair<int, const UnitTotals*>> order;
  for (const auto& [unit, u] : units) order.emplace_back(unit, &u);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.second->exposed != b.second->exposed ? a.second->exposed > b.second->exposed : a.first < b.first;
  });
  for (const auto& [unit, u] : order)
    host.row({unit_name(p, unit), u->count, u->total, u->overlapped, u->exposed, pct(u->overlapped, u->total),
              u->ag_exposed, u->rs_exposed, u->other_exposed});

  host.table("per_rank", {"rank", "collective_ns", "overlapped_ns", "exposed_ns", "overlap_pct"});
  for (const auto& r : p.ranks) {
    std::vector<Interval> mine;
    for (const auto& c : items)
      if (c.rank == r.rank) mine.push_back({std::max(c.time.start, lo), std::min(c.time.end, hi)});
    const IntervalSet comm = merge(std::move(mine));
    const std::int64_t total = total_length(comm);
    const std::int64_t exposed = total_length(subtract(comm, r.compute));
    host.row({r.rank, total, total - exposed, exposed, pct(total - exposed, total)});
  }

  // The three units with the most exposed time, each with its worst collective to jump to.
  for (std::size_t i = 0; i < order.size() && i < 3; ++i) {
    const auto& [unit, u] = order[i];
    if (u->exposed <= 0 || !u->worst) continue;
    char msg[400];
    std::snprintf(msg, sizeof msg, "%s%s: %.3f ms of collective time exposed (%.1f%% overlapped)",
                  unit == kPointToPoint ? "" : "FSDP unit ", unit == kPointToPoint ? "sends and receives" : p.module_name(unit).c_str(),
                  double(u->exposed) / 1e6, pct(u->overlapped, u->total));
    host.finding(i == 0 ? SS_SEVERITY_WARNING : SS_SEVERITY_INFO, msg, u->worst->time.start, u->worst->time.end,
                 u->worst->rank);
  }
  std::sort(exposed_items.begin(), exposed_items.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = 0; i < exposed_items.size() && i < 200; ++i) {
    const CommItem& c = *exposed_items[i].second;
    if (exposed_items[i].first <= 0) break;
    host.marker(c.time.start, c.time.end, c.rank,
                std::string("exposed ") + collective_type_name(c.type) + " (" + unit_name(p, unit_key(p, c)) + ")");
  }
}

}  // namespace

SS_DEFINE_PLUGIN("overlap", "Communication-computation overlap per FSDP unit",
                 "Collective time per FSDP unit and rank, and how much of it is exposed (no compute kernel "
                 "running on the rank).",
                 &run)
