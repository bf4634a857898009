// Order statistics the analyses report (count, mean, nearest-rank percentiles, max).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "plugins/api/plugin_sdk.h"
#include "plugins/builtin/common/launch_records.h"  // the analyses that use stats read launches too

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

}  // namespace ss::analysis
