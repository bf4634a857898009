// Order statistics the analyses report (count, mean, nearest-rank percentiles, max), and the
// check for the optional `launches` table, shared by launch-stats, copy-bandwidth and annotations.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "plugins/api/plugin_sdk.h"

namespace ss::analysis {

// Nearest-rank percentile of sorted values: the smallest value with at least p% of the values at
// or below it (sorted[ceil(p/100 * n) - 1]); 0 for an empty list. No interpolation, so every
// percentile is a value that occurred and hand-made tests can state it exactly.
template <typename T>
T percentile_sorted(const std::vector<T>& sorted, double p) {
  if (sorted.empty()) return T{};
  const double rank = std::ceil(p / 100.0 * static_cast<double>(sorted.size()));
  const std::size_t i = rank < 1.0 ? 0 : static_cast<std::size_t>(rank) - 1;
  return sorted[std::min(i, sorted.size() - 1)];
}

struct Summary {
  std::int64_t count = 0;
  double mean = 0;
  std::int64_t p50 = 0, p99 = 0, max = 0;
};

// Sorts `v` in place.
inline Summary summarize(std::vector<std::int64_t>& v) {
  Summary s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (auto x : v) sum += static_cast<double>(x);
  s.count = static_cast<std::int64_t>(v.size());
  s.mean = sum / static_cast<double>(v.size());
  s.p50 = percentile_sorted(v, 50);
  s.p99 = percentile_sorted(v, 99);
  s.max = v.back();
  return s;
}

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

}  // namespace ss::analysis
