#include "plugins/builtin/common/profile_access.h"

#include <algorithm>
#include <cstdint>
#include <map>

namespace ss::analysis {

ProfileAccess::ProfileAccess(const ss::plugin::Host& h)
    : host(h), streams(h.streams()), lanes(h.range_lanes()), modules(h.modules()) {
  const std::int64_t lo = h.from(), hi = h.to();
  struct Acc {
    std::vector<Interval> compute, collective, copy;
    std::int64_t first = INT64_MAX, last = INT64_MIN;
    std::map<int, std::int64_t> compute_time_by_stream;
  };
  std::map<int, Acc> acc;
  for (std::size_t si = 0; si < streams.size(); ++si) {
    const auto& s = streams[si];
    for (std::size_t i = 0; i < s.count; ++i) {
      const ss_kernel_event& k = s.events[i];
      if (k.end < lo || k.start > hi) continue;
      Interval iv{std::max(k.start, lo), std::min(k.end, hi)};
      Acc& a = acc[s.rank];
      a.first = std::min(a.first, iv.start);
      a.last = std::max(a.last, iv.end);
      if (k.category == SS_KERNEL_COMPUTE) {
        a.compute.push_back(iv);
        a.compute_time_by_stream[static_cast<int>(si)] += iv.length();
      } else if (k.category == SS_KERNEL_COLLECTIVE) {
        a.collective.push_back(iv);
      } else {
        a.copy.push_back(iv);
      }
    }
  }
  for (auto& [r, a] : acc) {
    RankActivity ra;
    ra.rank = r;
    ra.window = h.has_time() ? Interval{lo, hi} : Interval{a.first, a.last};
    std::vector<Interval> all = a.compute;
    all.insert(all.end(), a.collective.begin(), a.collective.end());
    all.insert(all.end(), a.copy.begin(), a.copy.end());
    ra.compute = merge(std::move(a.compute));
    ra.collective = merge(std::move(a.collective));
    ra.copy = merge(std::move(a.copy));
    ra.busy = merge(std::move(all));
    std::int64_t best = -1;
    for (const auto& [si, t] : a.compute_time_by_stream)
      if (t > best) best = t, ra.compute_stream = si;
    if (ra.compute_stream >= 0) {
      std::vector<Interval> v;
      const auto& s = streams[static_cast<std::size_t>(ra.compute_stream)];
      for (std::size_t i = 0; i < s.count; ++i)
        if (s.events[i].end >= lo && s.events[i].start <= hi)
          v.push_back({std::max(s.events[i].start, lo), std::min(s.events[i].end, hi)});
      ra.compute_stream_busy = merge(std::move(v));
    }
    ranks.push_back(std::move(ra));
  }
  // With a time selection, a selected rank without kernels in it is idle for the whole window.
  if (h.has_time()) {
    for (const auto& r : h.ranks()) {
      if (acc.count(r.rank)) continue;
      RankActivity ra;
      ra.rank = r.rank;
      ra.window = {lo, hi};
      ranks.push_back(std::move(ra));
    }
    std::sort(ranks.begin(), ranks.end(), [](const RankActivity& a, const RankActivity& b) { return a.rank < b.rank; });
  }
}

const RankActivity* ProfileAccess::rank(int r) const {
  for (const auto& a : ranks)
    if (a.rank == r) return &a;
  return nullptr;
}

int ProfileAccess::unit_of(int m) const {
  for (int guard = 0; m >= 0 && m < static_cast<int>(modules.size()) && guard < 10000; ++guard) {
    const auto& mod = modules[static_cast<std::size_t>(m)];
    if (mod.is_fsdp_unit) return m;
    if (mod.fsdp_unit >= 0) return mod.fsdp_unit;
    m = mod.parent;
  }
  return -1;
}

std::string ProfileAccess::module_name(int m) const {
  if (m < 0 || m >= static_cast<int>(modules.size())) return "(unattributed)";
  const char* f = modules[static_cast<std::size_t>(m)].fqn;
  return f && *f ? std::string(f) : std::string("(root)");
}

const ss_range_event* ProfileAccess::innermost_range(int r, std::int64_t t, unsigned kinds, bool want_module) const {
  const ss_range_event* best = nullptr;
  int best_depth = -1;
  for (const auto& lane : lanes) {
    if (lane.rank != r || lane.thread_id < 0 || lane.depth <= best_depth) continue;
    // Ranges on one lane and depth do not overlap: the candidate is the last one starting <= t.
    const ss_range_event* first = lane.events;
    const ss_range_event* last = lane.events + lane.count;
    const ss_range_event* it =
        std::upper_bound(first, last, t, [](std::int64_t x, const ss_range_event& e) { return x < e.start; });
    if (it == first) continue;
    --it;
    if (it->end <= t || !(kinds & (1u << it->kind)) || (want_module && it->module < 0)) continue;
    best = it;
    best_depth = lane.depth;
  }
  return best;
}

std::int64_t ProfileAccess::cpu_busy_length(int r, Interval iv, unsigned kinds) const {
  std::vector<Interval> v;
  for (const auto& lane : lanes) {
    if (lane.rank != r || lane.thread_id < 0) continue;
    const ss_range_event* first = lane.events;
    const ss_range_event* last = lane.events + lane.count;
    const ss_range_event* it =
        std::upper_bound(first, last, iv.start, [](std::int64_t x, const ss_range_event& e) { return x < e.start; });
    if (it != first) --it;
    for (; it != last && it->start < iv.end; ++it)
      if (it->end > iv.start && (kinds & (1u << it->kind))) v.push_back({std::max(it->start, iv.start), std::min(it->end, iv.end)});
  }
  return total_length(merge(std::move(v)));
}

std::int64_t ProfileAccess::latest_cpu_start(int r, std::int64_t t, unsigned kinds) const {
  std::int64_t best = INT64_MIN;
  for (const auto& lane : lanes) {
    if (lane.rank != r || lane.thread_id < 0) continue;
    // Walk back from the last range starting <= t to the nearest one of a wanted kind.
    const ss_range_event* first = lane.events;
    const ss_range_event* it = std::upper_bound(first, first + lane.count, t,
                                                [](std::int64_t x, const ss_range_event& e) { return x < e.start; });
    while (it != first) {
      --it;
      if (it->start <= best) break;
      if (kinds & (1u << it->kind)) {
        best = it->start;
        break;
      }
    }
  }
  return best;
}

bool ProfileAccess::has_cpu_ranges(int r, unsigned kinds) const {
  for (const auto& lane : lanes) {
    if (lane.rank != r || lane.thread_id < 0) continue;
    for (std::size_t i = 0; i < lane.count; ++i)
      if (kinds & (1u << lane.events[i].kind)) return true;
  }
  return false;
}

}  // namespace ss::analysis
