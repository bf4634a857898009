#include "profiler/collector/core/clock_alignment.h"

#include <algorithm>

namespace ss::collector {

std::vector<ClockOffset> estimate_clock_offsets(const std::vector<RankClockInput>& ranks) {
  std::vector<ClockOffset> out;
  if (ranks.empty()) return out;
  const auto ref = std::min_element(ranks.begin(), ranks.end(), [](auto& a, auto& b) { return a.rank < b.rank; });
  for (const auto& r : ranks) {
    ClockOffset o;
    o.rank = r.rank;
    if (&r != &*ref && r.host != ref->host) {
      std::vector<TimeNs> diffs;
      for (const auto& [key, end] : r.collective_ends)
        if (auto it = ref->collective_ends.find(key); it != ref->collective_ends.end()) diffs.push_back(it->second - end);
      if (!diffs.empty()) {
        std::nth_element(diffs.begin(), diffs.begin() + diffs.size() / 2, diffs.end());
        o.offset_ns = diffs[diffs.size() / 2];
        o.matched = static_cast<int>(diffs.size());
      }
    }
    out.push_back(o);
  }
  return out;
}

}  // namespace ss::collector
