// Top kernels: kernels that start inside the window on the selected ranks, grouped by name and
// ranked by total GPU time (full durations; share = total / sum of all kernel durations).
#include <algorithm>
#include <climits>
#include <cstdio>
#include <unordered_map>

#include "plugins/api/plugin_sdk.h"

namespace {

constexpr std::size_t kTop = 25;

struct Totals {
  std::uint8_t category = 0;
  std::int64_t count = 0, total = 0, min = INT64_MAX, max = 0;
};

const char* category_name(std::uint8_t c) {
  static const char* kNames[] = {"compute", "collective", "memcpy", "memset"};
  return c < 4 ? kNames[c] : "unknown";
}

void run(const ss::plugin::Host& host) {
  const std::int64_t lo = host.from(), hi = host.to();
  std::unordered_map<std::uint32_t, Totals> by_name;
  std::int64_t all = 0;
  for (const auto& s : host.streams()) {
    for (std::size_t i = 0; i < s.count; ++i) {
      const ss_kernel_event& k = s.events[i];
      if (k.start < lo) continue;
      if (k.start > hi) break;  // sorted by start
      const std::int64_t d = k.end - k.start;
      Totals& t = by_name[k.name];
      t.category = k.category;
      ++t.count;
      t.total += d;
      t.min = std::min(t.min, d);
      t.max = std::max(t.max, d);
      all += d;
    }
  }
  std::vector<std::pair<std::uint32_t, Totals>> v(by_name.begin(), by_name.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.second.total != b.second.total ? a.second.total > b.second.total : a.first < b.first;
  });
  host.table("top_kernels", {"name", "category", "count", "total_ns", "mean_ns", "min_ns", "max_ns", "share_pct"});
  for (std::size_t i = 0; i < v.size() && i < kTop; ++i) {
    const auto& [name, t] = v[i];
    host.row({std::string(host.str(name)), category_name(t.category), t.count, t.total, t.total / t.count, t.min, t.max,
              all > 0 ? 100.0 * double(t.total) / double(all) : 0.0});
  }
  if (!v.empty() && all > 0) {
    char msg[160];
    std::snprintf(msg, sizeof msg, "the top kernel takes %.1f%% of all kernel time; %zu distinct kernels",
                  100.0 * double(v[0].second.total) / double(all), v.size());
    host.finding(SS_SEVERITY_INFO, msg);
  }
}

}  // namespace

SS_DEFINE_PLUGIN("top-kernels", "Top kernels by total GPU time",
                 "Kernels grouped by name, ranked by total time, with count, mean, min, max and share.", &run)
