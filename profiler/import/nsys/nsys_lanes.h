// NVTX ranges of an nsys export, per thread lane: FSDP hook ranges become modules and phases, a
// pre_forward .. post_forward pair becomes one Module range, ranges are nested per thread and
// written, and lookups answer "which module was open on this thread at this time" (kernel
// attribution through the runtime launch) and "which NCCL payload belongs to this launch".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "profiler/import/nsys/nccl_payload.h"
#include "storage/types.h"

namespace ss::import {
class ImportContext;
}

namespace ss::import::nsys {

struct NvtxRange {
  std::int64_t pid = 0;  // process key: globalPid >> 24 (machine and pid)
  std::int64_t global_tid = 0;
  TimeNs start = 0;  // nsys time (ns from session start)
  TimeNs end = 0;
  std::string name;  // without emit_nvtx suffixes
  bool nccl = false; // in the NCCL domain
  NcclPayload payload;
};

// Innermost-interval lookup over nested intervals (nsys times).
class IntervalIndex {
 public:
  // `own_module[i]` is interval i's own module or kNoRow; intervals without one inherit their parent's.
  void build(const std::vector<std::pair<TimeNs, TimeNs>>& intervals, const std::vector<RowId>& own_module);
  RowId module_at(TimeNs t) const;

 private:
  std::vector<TimeNs> start_, end_;
  std::vector<std::int64_t> parent_;  // position in the sorted arrays, -1 at top level
  std::vector<RowId> module_;
};

class Lanes {
 public:
  void set_ranks(const std::map<std::int64_t, int>& rank_of_pid) { rank_of_pid_ = rank_of_pid; }
  void set_thread_names(std::map<std::int64_t, std::string> names) { thread_names_ = std::move(names); }
  void add(NvtxRange r) { ranges_.push_back(std::move(r)); }

  // Builds modules, phases and nesting and writes threads, ranges, modules and steps.
  // `offset` converts nsys times to profile times.
  void write(ImportContext& ctx, TimeNs offset);

  RowId module_at(std::int64_t global_tid, TimeNs t) const;  // innermost module on the thread
  RowId module_on_rank_at(int rank, TimeNs t) const;         // innermost module range on any thread
  // The payload of the NCCL API call that launched a kernel at `t` on this thread; inside
  // ncclGroupEnd, the summed message sizes of the calls since ncclGroupStart.
  NcclPayload nccl_payload_at(std::int64_t global_tid, TimeNs t) const;
  int comm_size(std::uint64_t comm) const;  // from ncclCommInitRank payloads, 0 when unknown
  // The threads row of a thread (written by write() for threads with ranges, else added now).
  RowId thread_row(ImportContext& ctx, std::int64_t global_tid);

 private:
  RowId ensure_module(ImportContext& ctx, const std::string& fqn, bool fsdp_unit);

  std::map<std::int64_t, int> rank_of_pid_;
  std::map<std::int64_t, std::string> thread_names_;
  std::vector<NvtxRange> ranges_;
  std::unordered_map<std::int64_t, IntervalIndex> by_thread_;
  std::unordered_map<int, IntervalIndex> by_rank_;
  struct NcclCall {
    TimeNs start, end;
    std::string name;
    NcclPayload payload;
  };
  std::unordered_map<std::int64_t, std::vector<NcclCall>> nccl_by_thread_;  // sorted by start
  std::map<std::uint64_t, int> comm_size_;
  std::unordered_map<std::int64_t, RowId> thread_rows_;
};

}  // namespace ss::import::nsys
