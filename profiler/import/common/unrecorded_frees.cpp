#include "profiler/import/common/unrecorded_frees.h"

#include <algorithm>
#include <unordered_map>

namespace ss::import {

std::vector<AllocatorEvent> add_unrecorded_frees(std::vector<AllocatorEvent> events, std::int64_t baseline) {
  // 1. Reuse of a live address: the earlier block was freed, unrecorded, before the reuse.
  struct Missing {
    std::size_t alloc_index;  // in `events`
    std::size_t reuse_index;
  };
  std::vector<Missing> missing;
  std::unordered_map<std::int64_t, std::size_t> live;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const AllocatorEvent& e = events[i];
    if (e.bytes > 0) {
      if (auto it = live.find(e.address); it != live.end()) missing.push_back({it->second, i});
      live[e.address] = i;
    } else if (e.bytes < 0) {
      live.erase(e.address);
    }
  }
  if (missing.empty()) return events;

  // 2. Where each was really freed: the running sum (with every missing free still unplaced)
  // exceeds the allocator's own total by at least the block from that event on.
  std::vector<std::int64_t> gap(events.size(), INT64_MIN);  // running - total, where total is known
  std::int64_t level = baseline;
  for (std::size_t i = 0; i < events.size(); ++i) {
    level += events[i].bytes;
    if (events[i].total_allocated >= 0) gap[i] = level - events[i].total_allocated;
  }
  std::vector<std::pair<std::size_t, AllocatorEvent>> inserts;  // (insert before index, free)
  for (const Missing& m : missing) {
    const AllocatorEvent& a = events[m.alloc_index];
    std::size_t at = m.reuse_index;
    for (std::size_t j = m.alloc_index + 1; j < m.reuse_index; ++j)
      if (gap[j] != INT64_MIN && gap[j] >= a.bytes) {
        at = j;
        break;
      }
    for (std::size_t j = at; j < events.size(); ++j)  // placed: no longer part of the gap
      if (gap[j] != INT64_MIN) gap[j] -= a.bytes;
    AllocatorEvent f = a;
    f.bytes = -a.bytes;
    f.time = events[at].time;
    f.total_allocated = -1;
    f.synthetic = true;
    inserts.emplace_back(at, f);
  }
  std::stable_sort(inserts.begin(), inserts.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<AllocatorEvent> out;
  out.reserve(events.size() + inserts.size());
  std::size_t k = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    for (; k < inserts.size() && inserts[k].first == i; ++k) out.push_back(inserts[k].second);
    out.push_back(events[i]);
  }
  return out;
}

}  // namespace ss::import
