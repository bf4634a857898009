// `record --memory history`: per-tensor GPU memory from PyTorch's caching allocator itself.
//
// The native caching allocator serves tensors from large cudaMalloc segments, so CUPTI's memory
// records show segments, not tensors. Its own history does show tensors: on every CUDA rank the
// Python package turns on torch.cuda.memory._record_memory_history at CUDA's lazy init and dumps
// the snapshot at exit (profiler/python/shardscope/_cuda_memory.py), as
// <stem>.cuda_memory.pickle, with the tensor facts it learnt (parameters, optimizer states) in
// <stem>.cuda_memory.facts.tsv ("<unix ns>\t<ss:mem:... message>" lines). The job's allocator
// is the one it chose; nothing it sees changes.
//
// After the job, each snapshot becomes its rank's memory events, replacing the collector's
// segment records in that rank's file (or in a rank file built from the sidecar when no
// collector ran):
//  - the snapshot importer reads the pickle (alloc .. free_completed per block, record_function
//    ranges such as FSDP::all_gather_copy_in);
//  - an allocation's module is the innermost module range (the hooks', any thread) open at its
//    time, else a tensor fact's module, else what the snapshot names (an FSDP range's unit, frames);
//  - categories follow memory_categories.h with the rank's steps and phases (rank_phases.h),
//    the FSDP / optimizer contexts of the snapshot's ranges, and the tensor facts.
// Times: the snapshot's time_us and the facts are CLOCK_REALTIME, as CUPTI's and the sidecar's are.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "profiler/common/memory_categories.h"

namespace ss::record {

inline constexpr const char* kSnapshotSuffix = ".cuda_memory.pickle";
inline constexpr const char* kSnapshotFactsSuffix = ".cuda_memory.facts.tsv";

struct HistoryAttachResult {
  int ranks = 0;                      // rank files that took a snapshot's events
  std::int64_t events = 0;            // memory events written
  std::vector<std::string> warnings;  // snapshots that could not be used, and why
};

// The tensor facts of a facts file's lines ("<unix ns>", message), times made relative to `origin`:
// the hooks' "ss:mem:..." facts, and the "ss:live:..." ones told when a capture window opens after
// step 0 (record --steps A:B, A > 0: the parameters, gradients and optimizer state alive then). The
// history has their allocations (it runs from CUDA's start), so a live tensor is a fact about the
// allocation live at its address then, as an ss:mem fact is; its size is the history's. Without
// them a window's memory on a GPU had no named tensor (`history.tensor_facts` 0 on the fourth
// loan's H200). Other lines ("ss:freed:...": the history has the frees) are skipped.
std::vector<TensorFact> history_tensor_facts(const std::vector<std::pair<TimeNs, std::string>>& lines, TimeNs origin);

// Attaches every <stem>.cuda_memory.pickle in `parts_dir` to its rank file <stem>.ssdb. A
// snapshot that cannot be read leaves that rank as the collector recorded it (with a warning).
HistoryAttachResult attach_allocator_history(const std::string& parts_dir);

}  // namespace ss::record
