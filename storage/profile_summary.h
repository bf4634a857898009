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

struct ProfileSummary {
  std::string path;
  int schema_version = 0;
  Origin origin;
  std::vector<RankInfo> ranks;  // from the ranks table plus ranks seen only in events
  TimeNs time_begin = 0;
  TimeNs time_end = 0;
  TimeNs time_origin_unix_ns = 0;
  std::int64_t kernels = 0;
  std::int64_t collectives = 0;
  std::int64_t ranges = 0;
  std::int64_t modules = 0;
  std::int64_t memory_events = 0;
  std::int64_t steps = 0;  // distinct step numbers
  std::int64_t streams = 0;
  std::vector<KernelTotal> top_kernels;  // by total time, at most 10
  std::vector<CategoryTotal> time_by_category;
  std::vector<SkippedCount> skipped;
};

ProfileSummary summarize_profile(const std::string& path, int top_n = 10);

}  // namespace ss
