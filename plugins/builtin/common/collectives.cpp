#include <algorithm>
#include <optional>
#include <unordered_map>

#include "plugins/builtin/common/profile_access.h"
#include "plugins/builtin/common/rank_steps.h"

namespace ss::analysis {

const char* collective_type_name(std::uint8_t type) {
  static const char* kNames[] = {"unknown", "all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                 "reduce",  "all_to_all", "send_recv",  "send",           "recv",
                                 "gather",  "scatter",    "barrier"};
  return type < sizeof kNames / sizeof kNames[0] ? kNames[type] : "unknown";
}

namespace {

constexpr std::uint8_t kAllGather = 2;

// Compute kernels of one rank with a module, sorted by start (for rule 3), searched within
// [lo, hi): the collective's step.
struct ComputeIndex {
  std::vector<const ss_kernel_event*> kernels;
  void finish() {
    std::sort(kernels.begin(), kernels.end(), [](auto* a, auto* b) { return a->start < b->start; });
  }
  int first_starting_at_or_after(std::int64_t t, std::int64_t hi) const {
    auto it = std::lower_bound(kernels.begin(), kernels.end(), t, [](auto* k, std::int64_t x) { return k->start < x; });
    return it == kernels.end() || (*it)->start >= hi ? -1 : (*it)->module;
  }
  int last_ending_at_or_before(std::int64_t t, std::int64_t lo) const {
    // Kernels on one compute stream end in start order; scan back a little for concurrency.
    auto it = std::upper_bound(kernels.begin(), kernels.end(), t, [](std::int64_t x, auto* k) { return x < k->start; });
    for (int steps = 0; it != kernels.begin() && steps < 64; ++steps) {
      --it;
      if ((*it)->start < lo) return -1;
      if ((*it)->end <= t) return (*it)->module;
    }
    return -1;
  }
};

}  // namespace

std::vector<CommItem> collect_collectives(const ProfileAccess& p) {
  const auto& host = p.host;
  const std::int64_t lo = host.from(), hi = host.to();
  std::unordered_map<std::int64_t, int> kernel_module;  // NCCL kernel id -> module
  std::unordered_map<int, ComputeIndex> compute;
  std::vector<CommItem> items;
  const auto table = host.collectives();
  for (const auto& s : p.streams) {
    for (std::size_t i = 0; i < s.count; ++i) {
      const ss_kernel_event& k = s.events[i];
      if (k.category == SS_KERNEL_COLLECTIVE) {
        kernel_module[k.id] = k.module;
        if (table.empty() && k.end >= lo && k.start <= hi)
          items.push_back({s.rank, {k.start, k.end}, 0, -1, -1, 0, k.module});
      } else if (k.category == SS_KERNEL_COMPUTE && k.module >= 0) {
        compute[s.rank].kernels.push_back(&k);
      }
    }
  }
  for (auto& [r, c] : compute) c.finish();
  for (const auto& c : table) {
    if (!host.rank_selected(c.rank) || c.end < lo || c.start > hi) continue;
    int module = -1;
    if (c.kernel_id >= 0)
      if (auto it = kernel_module.find(c.kernel_id); it != kernel_module.end()) module = it->second;
    items.push_back({c.rank, {c.start, c.end}, c.type, c.process_group, c.sequence, c.bytes, module});
  }
  const RankSteps steps(host);
  for (auto& item : items) {
    if (item.module >= 0) continue;
    // Rule 2: the GPU-lane range with a module that overlaps the collective most.
    std::int64_t best = 0;
    for (const auto& lane : p.lanes) {
      if (lane.rank != item.rank || lane.stream_id < 0) continue;
      // Ranges on one lane and depth do not overlap: start at the last one beginning <= start.
      const ss_range_event* first = lane.events;
      const ss_range_event* last = lane.events + lane.count;
      const ss_range_event* at = std::upper_bound(first, last, item.time.start,
                                                  [](std::int64_t x, const ss_range_event& e) { return x < e.start; });
      if (at != first) --at;
      for (; at != last; ++at) {
        const auto& e = *at;
        if (e.start >= item.time.end) break;
        const std::int64_t ov = std::min(e.end, item.time.end) - std::max(e.start, item.time.start);
        if (e.module >= 0 && ov > best) best = ov, item.module = e.module;
      }
    }
    if (item.module >= 0) continue;
    // Rule 3: the compute that consumes (all-gather) or produced (others) its data, in its step:
    // a collective before the first step (a model's initialisation, a checkpoint load) or between
    // steps feeds no module's forward or backward, and the first forward's module is not its owner.
    auto it = compute.find(item.rank);
    if (it == compute.end()) continue;
    const std::optional<Interval> step = steps.window(item.rank, item.time.start);
    if (!step) continue;
    item.module = item.type == kAllGather ? it->second.first_starting_at_or_after(item.time.end, step->end)
                                          : it->second.last_ending_at_or_before(item.time.start, step->start);
  }
  return items;
}

}  // namespace ss::analysis
