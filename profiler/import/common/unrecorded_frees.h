// Frees the profiler did not record. torch.profiler misses some frees made on threads it does
// not follow (on CPU runs: gloo's worker threads drop the all-gather output when c10d's Work
// object dies), and the next allocation at that address is then the first sign of it: two live
// blocks cannot share an address. Each such block gets a free, placed where the trace's own
// "Total Allocated" first falls short of the running sum by the block's size (the moment it was
// really freed), or just before the reuse when the trace has no totals. A block that is never
// allocated again is found by the total alone: the running sum exceeds it by exactly its size.
#pragma once

#include <cstdint>
#include <vector>

#include "storage/types.h"

namespace ss::import {

struct AllocatorEvent {
  TimeNs time = 0;
  std::int64_t address = 0;
  std::int64_t bytes = 0;            // > 0 allocation, < 0 free
  std::int64_t total_allocated = -1; // the allocator's total after this event, -1 when unknown
  bool synthetic = false;            // a free added here
  std::size_t source = 0;            // the caller's index of the event (synthetic: of the allocation)
};

// `events` in time order (stable); returns them with the missing frees inserted, in time order:
// first the frees proven by a reused address, then those the trace's total proves for blocks never
// reused (where the running sum first exceeds the total by exactly one live block's size).
std::vector<AllocatorEvent> add_unrecorded_frees(std::vector<AllocatorEvent> events, std::int64_t baseline);
std::vector<AllocatorEvent> add_reused_address_frees(std::vector<AllocatorEvent> events, std::int64_t baseline);

}  // namespace ss::import
