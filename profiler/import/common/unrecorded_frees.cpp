#include "profiler/import/common/unrecorded_frees.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace ss::import {

namespace {

// The live blocks of one size, oldest first (what a std::set of their indices would give, without
// a tree node per allocation: a CPU trace has one [memory] allocation per three operators). Indices
// are added in increasing order; a removed one is only marked, and skipped when it reaches the front.
class BlocksOfSize {
 public:
  void add(std::size_t index) { indices_.push_back(index); }
  // The oldest block still in, or SIZE_MAX.
  std::size_t oldest(const std::vector<char>& in) {
    while (head_ < indices_.size() && !in[indices_[head_]]) ++head_;
    return head_ < indices_.size() ? indices_[head_] : SIZE_MAX;
  }

 private:
  std::vector<std::size_t> indices_;
  std::size_t head_ = 0;
};

// Frees still missing after the reuse rule (a block never allocated again): where the running sum
// first exceeds the trace's total by exactly the size of a live block, that block was freed
// unrecorded just before; the oldest live block of that size is taken (blocks of one size, such
// as FSDP's all-gather buffers, are freed in the order they were made).
std::vector<AllocatorEvent> free_by_total(std::vector<AllocatorEvent> events, std::int64_t baseline) {
  std::vector<AllocatorEvent> out;
  out.reserve(events.size());
  std::unordered_map<std::int64_t, std::size_t> live;  // address -> index in `out`
  std::unordered_map<std::int64_t, BlocksOfSize> by_size;  // bytes -> indices in `out` of live blocks
  std::vector<char> in_by_size;  // by index in `out`: still listed in by_size
  auto remove = [&](std::size_t index) { in_by_size[index] = 0; };
  std::int64_t level = baseline;
  std::unordered_set<std::int64_t> freed_here;  // addresses given a free here and not allocated since
  for (const AllocatorEvent& e : events) {
    if (e.bytes < 0 && live.count(e.address) == 0 && freed_here.erase(e.address)) continue;  // recorded late after all
    if (e.bytes > 0) freed_here.erase(e.address);
    const std::int64_t gap = level + e.bytes - e.total_allocated;
    if (e.total_allocated >= 0 && gap > 0) {
      auto it = by_size.find(gap);
      const std::size_t idx = it == by_size.end() ? SIZE_MAX : it->second.oldest(in_by_size);
      if (idx != SIZE_MAX) {
        AllocatorEvent f = out[idx];
        f.bytes = -f.bytes;
        f.time = e.time;
        f.total_allocated = -1;
        f.synthetic = true;
        live.erase(f.address);
        freed_here.insert(f.address);
        remove(idx);
        level += f.bytes;
        out.push_back(f);
        in_by_size.push_back(0);
      }
    }
    level += e.bytes;
    if (e.bytes > 0) {
      live[e.address] = out.size();
      by_size[e.bytes].add(out.size());
      in_by_size.push_back(1);
    } else {
      if (e.bytes < 0)
        if (auto it = live.find(e.address); it != live.end()) {
          remove(it->second);
          live.erase(it);
        }
      in_by_size.push_back(0);
    }
    out.push_back(e);
  }
  return out;
}

}  // namespace

std::vector<AllocatorEvent> add_unrecorded_frees(std::vector<AllocatorEvent> events, std::int64_t baseline) {
  return free_by_total(add_reused_address_frees(std::move(events), baseline), baseline);
}

std::vector<AllocatorEvent> add_reused_address_frees(std::vector<AllocatorEvent> events, std::int64_t baseline) {
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
