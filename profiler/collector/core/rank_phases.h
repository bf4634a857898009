// A rank file's training phases, as memory categories need them (profiler/common/memory_categories.h):
// each step with its forward / backward / optimizer boundaries (forward until the first backward
// module range, backward until the optimizer range; a later pass of gradient accumulation from a
// forward module range to the next backward range), and the optimizer and recompute ranges as
// time sets. Shared by the merge (the collector's cudaMallocAsync events) and `record --memory
// history` (the caching allocator's per-tensor events, launcher/allocator_history.h).
#pragma once

#include <vector>

#include "profiler/common/memory_categories.h"
#include "storage/interval_union.h"
#include "storage/sqlite_handle.h"

namespace ss::collector {

struct RankPhases {
  std::vector<StepPhases> steps;          // sorted by start
  std::vector<TimeInterval> optimizer;    // unions, sorted and disjoint
  std::vector<TimeInterval> recompute;

  // Optimizer inside an optimizer range, Recompute inside a recompute range, else None.
  MemContext context_at(TimeNs t) const;
};

// Reads the steps and ranges of a rank file (`db`), every time plus `shift`.
RankPhases read_rank_phases(sql::Db& db, TimeNs shift);

}  // namespace ss::collector
