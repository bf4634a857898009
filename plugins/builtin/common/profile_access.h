// Per-rank views the built-in analyses share, computed from the host's in-memory model through
// the plugin SDK: GPU activity by kind as merged intervals inside the selection, the compute
// stream, module -> FSDP unit attribution, and the innermost CPU range covering an instant.
#pragma once

#include <string>
#include <vector>

#include "plugins/api/plugin_sdk.h"
#include "plugins/builtin/common/intervals.h"
#include "storage/collective_match.h"

namespace ss::analysis {

struct RankActivity {
  int rank = 0;
  Interval window;          // the selection, or the rank's first kernel start .. last kernel end
  IntervalSet compute;      // compute kernels, any stream
  IntervalSet collective;   // NCCL kernels
  IntervalSet copy;         // memcpy / memset
  IntervalSet busy;         // union of all of the above
  int compute_stream = -1;  // index into streams(): the stream with the most compute-kernel time
  IntervalSet compute_stream_busy;  // every kernel on that stream
};

struct ProfileAccess {
  explicit ProfileAccess(const ss::plugin::Host& host);

  const ss::plugin::Host& host;
  std::vector<ss_stream_info> streams;     // selected ranks only
  std::vector<ss_range_lane> lanes;        // selected ranks only
  std::vector<ss_module_info> modules;
  std::vector<RankActivity> ranks;         // selected ranks that have kernels, sorted by rank

  const RankActivity* rank(int r) const;
  // FSDP unit owning a module's parameters: the module itself when it is a unit, its recorded
  // unit, else the nearest ancestor that is a unit. -1 when none.
  int unit_of(int module) const;
  std::string module_name(int module) const;  // "(root)" for "", "(unattributed)" for -1
  // Innermost range on the rank's CPU lanes (thread_id >= 0) containing t whose kind is in
  // `kinds` (bitmask of 1 << SS_RANGE_*) and, if want_module, has a module. nullptr when none.
  const ss_range_event* innermost_range(int rank, std::int64_t t, unsigned kinds, bool want_module) const;
  // Length of iv covered by CPU ranges of the given kinds (bitmask of 1 << SS_RANGE_*) on the
  // rank's CPU lanes.
  std::int64_t cpu_busy_length(int rank, Interval iv, unsigned kinds) const;
  // The latest start <= t among CPU ranges of the given kinds on the rank; INT64_MIN when none.
  std::int64_t latest_cpu_start(int rank, std::int64_t t, unsigned kinds) const;
  bool has_cpu_ranges(int rank, unsigned kinds) const;
};

}  // namespace ss::analysis

namespace ss::analysis {

// One collective as the analyses see it: from the collectives table, or from an NCCL kernel when
// the profile has no collectives rows. `module` is the attributed module (see attribute()).
struct CommItem {
  int rank = 0;
  Interval time;
  std::uint8_t type = 0;  // storage/types.h CollectiveType
  std::int64_t process_group = -1;
  std::int64_t sequence = -1;
  std::int64_t bytes = 0;
  int module = -1;
};

const char* collective_type_name(std::uint8_t type);

// storage/collective_match.h on the plugin API's type numbers.
inline bool is_point_to_point(std::uint8_t type) { return ss::is_point_to_point(static_cast<ss::CollectiveType>(type)); }
inline bool same_operation(std::uint8_t type_a, std::int64_t bytes_a, std::uint8_t type_b, std::int64_t bytes_b) {
  return ss::same_operation(static_cast<ss::CollectiveType>(type_a), bytes_a, static_cast<ss::CollectiveType>(type_b), bytes_b);
}

// Collectives of the selected ranks that intersect the window (times not clipped), each
// attributed to a module: (1) the module recorded on its NCCL kernel; (2) the module of the GPU
// range it overlaps most; (3) for all-gathers the module of the first compute kernel on the rank
// that starts after it ends (the compute that consumes the gathered parameters), for other
// collectives the module of the last compute kernel that ended before it started (the backward
// that produced the gradients).
std::vector<CommItem> collect_collectives(const ProfileAccess& p);

}  // namespace ss::analysis
