#include "plugins/host/steps_window.h"

#include <algorithm>
#include <climits>

namespace ss::plugins {
namespace {

bool selected(const std::vector<int>& ranks, int r) {
  return ranks.empty() || std::find(ranks.begin(), ranks.end(), r) != ranks.end();
}

}  // namespace

std::optional<std::pair<std::int64_t, std::int64_t>> step_numbers(const Profile& profile, const std::vector<int>& ranks) {
  std::int64_t lowest = INT64_MAX, highest = INT64_MIN;
  for (const auto& rank : profile.ranks)
    if (selected(ranks, rank.info.rank))
      for (const auto& s : rank.steps) lowest = std::min(lowest, s.number), highest = std::max(highest, s.number);
  if (lowest == INT64_MAX) return std::nullopt;
  return std::pair{lowest, highest};
}

std::optional<std::pair<TimeNs, TimeNs>> steps_window(const Profile& profile, std::int64_t first, std::int64_t end,
                                                      const std::vector<int>& ranks) {
  TimeNs from = INT64_MAX, to = INT64_MIN;
  for (const auto& rank : profile.ranks) {
    if (!selected(ranks, rank.info.rank)) continue;
    for (const auto& s : rank.steps) {
      if (s.number < first || (end >= 0 && s.number >= end)) continue;
      from = std::min(from, s.start), to = std::max(to, s.end);
    }
  }
  if (from == INT64_MAX) return std::nullopt;
  return std::pair{from, to};
}

}  // namespace ss::plugins
