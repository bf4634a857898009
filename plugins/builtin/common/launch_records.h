// The optional `launches` table (the host call behind each kernel, copy and memset), as every
// analysis that reads it needs it: whether the profile has launch records, why not, and the
// launch calls of the selected ranks by kernel id.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>

#include "plugins/api/plugin_sdk.h"

namespace ss::analysis {

// Profiles written before launch records were kept have no `launches` table (nor launch_view);
// profiles whose source had no launch calls (synthetic ones, traces without cuda_runtime events)
// have an empty one.
enum class LaunchRecords { NoTable, Empty, Present };

inline LaunchRecords launch_records(const ss::plugin::Host& host) {
  std::int64_t n = 0;
  host.query("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='launches'",
             [&](std::span<const ss_value> row) { n = row[0].i; });
  if (n == 0) return LaunchRecords::NoTable;
  std::int64_t rows = 0;
  host.query("SELECT EXISTS (SELECT 1 FROM launches)", [&](std::span<const ss_value> row) { rows = row[0].i; });
  return rows ? LaunchRecords::Present : LaunchRecords::Empty;
}

inline const char* no_launches_message(LaunchRecords r) {
  return r == LaunchRecords::NoTable
             ? "the profile has no launch records (no 'launches' table: it was written before ShardScope kept the "
               "host launch calls); re-import the trace to get them"
             : "the profile has no launch records (its 'launches' table is empty: the source had no host launch "
               "calls, e.g. a synthetic profile or a trace without cuda_runtime events)";
}

struct LaunchCall {
  std::int64_t start = 0, end = 0;
};

// kernels.id -> its launch call, for the selected ranks; empty without launch records.
inline std::unordered_map<std::uint32_t, LaunchCall> launch_calls(const ss::plugin::Host& host, LaunchRecords records) {
  std::unordered_map<std::uint32_t, LaunchCall> out;
  if (records != LaunchRecords::Present) return out;
  host.query("SELECT kernel_id, rank, start_ns, start_ns + duration_ns FROM launches", [&](std::span<const ss_value> row) {
    if (host.rank_selected(static_cast<int>(row[1].i))) out[static_cast<std::uint32_t>(row[0].i)] = {row[2].i, row[3].i};
  });
  return out;
}

}  // namespace ss::analysis
