#include "profiler/collector/core/module_lanes.h"

#include <algorithm>

namespace ss::collector {

namespace {
// Walking back further than this from the candidate means the thread ran thousands of sibling
// ranges inside one parent; we then give up rather than spend unbounded time per kernel.
constexpr std::size_t kMaxWalk = 8192;
}  // namespace

void ModuleLanes::open(std::uint32_t tid, std::uint64_t marker_id, TimeNs start, std::string fqn, RangePhase phase) {
  auto& lane = lanes_[tid];
  LaneRange r{start, kOpenEnd, marker_id, std::move(fqn), phase};
  if (lane.empty() || lane.back().start <= start) {
    lane.push_back(std::move(r));
    return;
  }
  auto it = std::upper_bound(lane.begin(), lane.end(), start, [](TimeNs t, const LaneRange& x) { return t < x.start; });
  lane.insert(it, std::move(r));
}

bool ModuleLanes::close(std::uint32_t tid, std::uint64_t marker_id, TimeNs end) {
  auto it = lanes_.find(tid);
  if (it == lanes_.end()) return false;
  auto& lane = it->second;
  for (auto r = lane.rbegin(); r != lane.rend(); ++r)
    if (r->marker_id == marker_id && r->end == kOpenEnd) {
      r->end = end;
      return true;
    }
  return false;
}

bool ModuleLanes::close_any_thread(std::uint64_t marker_id, TimeNs end) {
  for (auto& [tid, lane] : lanes_)
    if (close(tid, marker_id, end)) return true;
  return false;
}

const LaneRange* ModuleLanes::innermost(std::uint32_t tid, TimeNs t) const {
  auto it = lanes_.find(tid);
  if (it == lanes_.end()) return nullptr;
  const auto& lane = it->second;
  auto first_after = std::upper_bound(lane.begin(), lane.end(), t, [](TimeNs v, const LaneRange& x) { return v < x.start; });
  std::size_t walked = 0;
  for (auto r = std::make_reverse_iterator(first_after); r != lane.rend() && walked < kMaxWalk; ++r, ++walked)
    if (r->end > t) return &*r;
  return nullptr;
}

void ModuleLanes::prune(TimeNs before) {
  for (auto& [tid, lane] : lanes_)
    std::erase_if(lane, [&](const LaneRange& r) { return r.end != kOpenEnd && r.end < before; });
}

std::size_t ModuleLanes::size() const {
  std::size_t n = 0;
  for (const auto& [tid, lane] : lanes_) n += lane.size();
  return n;
}

}  // namespace ss::collector
