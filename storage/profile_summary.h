// What `shardscope info` reports about a profile, computed with SQL aggregates on the file (no
// full load), so that it is quick on large profiles.
#pragma once

#include <string>
#include <vector>

#include "storage/types.h"

namespace ss {

struct KernelTotal {
  std::string name;
  std::int64_t count = 0;
  std::int64_t total_ns = 0;
};

struct CategoryTotal {
  KernelCategory category = KernelCategory::Compute;
  std::int64_t count = 0;
  std::int64_t total_ns = 0;
};

struct SkippedCount {
  std::string reason;
  std::int64_t count = 0;
};

// Collectives of one kind and size: FSDP's all-gathers of one unit share (type, group, bytes).
struct CollectiveTotal {
  CollectiveType type = CollectiveType::Unknown;
  std::string group;        // process group description or name
  std::int64_t bytes = 0;   // per collective, this rank's full buffer
  std::int64_t count = 0;   // over all ranks
  std::int64_t ranks = 0;   // ranks that ran it
  std::string ran_as;       // what the lane called it when that differs (gloo's "gloo:all_reduce")
  std::int64_t in_steps = 0;  // of `count`, those inside a step (not initialisation, not after the last step)
};

// One rank's memory peak (allocated bytes, from the memory events) and what was live then.
struct MemoryPeak {
  int rank = 0;
  std::int64_t peak_bytes = 0;
  TimeNs time = 0;
  std::int64_t by_category[kMemoryCategoryCount] = {};
};

struct ProfileSummary {
  std::string path;
  int schema_version = 0;
  Origin origin;
  std::vector<RankInfo> ranks;  // from the ranks table plus ranks seen only in events
  TimeNs time_begin = 0;
  TimeNs time_end = 0;
  TimeNs time_origin_unix_ns = 0;
  // GPU activities by kind: kernels (compute and communication kernels), memory copies and
  // memsets; gpu_activities is their total (the rows of the kernels table).
  std::int64_t kernels = 0;
  std::int64_t copies = 0;
  std::int64_t memsets = 0;
  std::int64_t gpu_activities = 0;
  std::int64_t collectives = 0;
  std::int64_t ranges = 0;
  std::int64_t modules = 0;
  std::int64_t memory_events = 0;
  std::int64_t steps = 0;  // distinct step numbers
  std::int64_t streams = 0;
  std::vector<KernelTotal> top_kernels;  // by total time, at most 10
  std::vector<CategoryTotal> time_by_category;
  std::vector<SkippedCount> skipped;
  std::vector<CollectiveTotal> collective_totals;  // by (type, group, bytes)
  std::vector<MemoryPeak> memory_peaks;            // one per rank with memory events
  std::int64_t fsdp_units = 0;
  std::int64_t fsdp_unit_params = 0;  // parameters held by the units (modules.param_count)
  // The module hooks' backward range scope as recorded ("modules", "units": record
  // --backward-ranges); "" when the profile does not say (imported, simulated, older recordings).
  std::string backward_ranges;
};

ProfileSummary summarize_profile(const std::string& path, int top_n = 10);

}  // namespace ss
