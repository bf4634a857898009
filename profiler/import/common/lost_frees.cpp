#include "profiler/import/common/lost_frees.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <unordered_map>

namespace ss::import {

namespace {

// The name of a point outside every named range of its step (placed by its fraction of the step).
constexpr std::uint32_t kStepItself = ProgramPoints::kNone;
constexpr TimeNs kNoTime = std::numeric_limits<TimeNs>::min();

TimeNs at_fraction(TimeNs start, TimeNs end, double f) {
  return start + static_cast<TimeNs>(std::llround(f * static_cast<double>(end - start)));
}

double fraction_of(TimeNs t, TimeNs start, TimeNs end) {
  return end > start ? static_cast<double>(t - start) / static_cast<double>(end - start) : 0.0;
}

}  // namespace

ProgramPoints::ProgramPoints(std::vector<std::pair<TimeNs, TimeNs>> steps, std::vector<Range> ranges,
                             std::vector<TimeNs> allocations)
    : steps_(std::move(steps)), ranges_(std::move(ranges)), allocations_(std::move(allocations)) {
  std::sort(allocations_.begin(), allocations_.end());
  std::stable_sort(ranges_.begin(), ranges_.end(), [](const Range& a, const Range& b) {
    return a.start != b.start ? a.start < b.start : a.end > b.end;  // outer first
  });
  std::map<std::tuple<int, std::uint32_t, std::uint32_t>, int> seen;  // (step, parent, name) -> occurrences so far
  std::vector<std::size_t> open;  // the ranges around the current one, outermost first
  std::vector<std::pair<TimeNs, TimeNs>> intervals;
  std::vector<std::int64_t> values;
  for (std::size_t i = 0; i < ranges_.size(); ++i) {
    const Range& r = ranges_[i];
    while (!open.empty() && ranges_[open.back()].end <= r.start) open.pop_back();
    parent_.push_back(open.empty() ? kNone : ranges_[open.back()].name);
    open.push_back(i);
    const int s = step_at(r.start);
    step_.push_back(s);
    occurrence_.push_back(s < 0 ? -1 : seen[{s, parent_.back(), r.name}]++);
    if (s >= 0) by_place_.emplace(std::make_tuple(s, parent_.back(), r.name, occurrence_.back()), i);
    intervals.emplace_back(r.start, r.end);
    values.push_back(static_cast<std::int64_t>(i));
  }
  innermost_ = InnermostRangeIndex(intervals, values);
  by_end_.resize(ranges_.size());
  for (std::size_t i = 0; i < by_end_.size(); ++i) by_end_[i] = i;
  std::stable_sort(by_end_.begin(), by_end_.end(), [&](std::size_t a, std::size_t b) { return ranges_[a].end < ranges_[b].end; });
}

int ProgramPoints::step_at(TimeNs t) const {
  auto it = std::upper_bound(steps_.begin(), steps_.end(), t, [](TimeNs v, const auto& s) { return v < s.first; });
  if (it == steps_.begin()) return -1;
  --it;
  return t < it->second ? static_cast<int>(it - steps_.begin()) : -1;
}

std::optional<ProgramPoints::Point> ProgramPoints::at(TimeNs t) const {
  const int s = step_at(t);
  if (s < 0) return std::nullopt;
  const std::int64_t r = innermost_.at(t, -1);
  if (r >= 0 && step_[static_cast<std::size_t>(r)] == s) {
    const Range& range = ranges_[static_cast<std::size_t>(r)];
    const auto i = static_cast<std::size_t>(r);
    const std::size_t inside = allocations_in(range.start, range.end).second;
    const std::size_t before = allocations_in(range.start, t).second;
    return Point{s, range.name, parent_[i], occurrence_[i], fraction_of(t, range.start, range.end), -1,
                 static_cast<int>(before), static_cast<int>(inside)};
  }
  // Between ranges (a loss computed outside every module): after the one that ended last.
  auto it = std::upper_bound(by_end_.begin(), by_end_.end(), t, [&](TimeNs v, std::size_t i) { return v < ranges_[i].end; });
  if (it != by_end_.begin() && step_[*std::prev(it)] == s) {
    const std::size_t i = *std::prev(it);
    return Point{s, ranges_[i].name, parent_[i], occurrence_[i], 1.0, t - ranges_[i].end};
  }
  const auto& [start, end] = steps_[static_cast<std::size_t>(s)];
  return Point{s, kStepItself, kNone, 0, fraction_of(t, start, end), -1};
}

const ProgramPoints::Range* ProgramPoints::range_at(const Point& p) const {
  auto it = by_place_.find({p.step, p.parent, p.name, p.occurrence});
  return it == by_place_.end() ? nullptr : &ranges_[it->second];
}

std::pair<std::size_t, std::size_t> ProgramPoints::allocations_in(TimeNs start, TimeNs end) const {
  const auto first = std::lower_bound(allocations_.begin(), allocations_.end(), start);
  const auto last = std::lower_bound(first, allocations_.end(), std::max(start, end));
  return {static_cast<std::size_t>(first - allocations_.begin()), static_cast<std::size_t>(last - first)};
}

std::optional<TimeNs> ProgramPoints::time_of(const Point& p) const {
  if (p.step < 0 || static_cast<std::size_t>(p.step) >= steps_.size()) return std::nullopt;
  const auto& [step_start, step_end] = steps_[static_cast<std::size_t>(p.step)];
  TimeNs t = 0;
  if (p.name == kStepItself) {
    t = at_fraction(step_start, step_end, p.fraction);
  } else {
    const Range* r = range_at(p);
    if (!r) return std::nullopt;
    t = p.after_end < 0 ? at_fraction(r->start, r->end, p.fraction) : r->end + p.after_end;
    // On the same side of each of the range's allocations as the point was in its own step.
    const auto [first, inside] = allocations_in(r->start, r->end);
    if (p.after_end < 0 && p.allocations_before >= 0 && static_cast<int>(inside) == p.allocations_inside) {
      const auto before = static_cast<std::size_t>(p.allocations_before);
      if (before < inside) t = std::min(t, allocations_[first + before] - 1);
      if (before > 0) t = std::max(t, allocations_[first + before - 1] + 1);  // equal times: after both
    }
  }
  return step_end > step_start ? std::clamp(t, step_start, step_end - 1) : step_start;  // inside the step ([start, end))
}

std::vector<AllocatorEvent> place_lost_frees(std::vector<AllocatorEvent> events, const std::vector<ProgramPoints>& lanes,
                                             const std::vector<int>& lane_of_source, std::int64_t* placed,
                                             const std::vector<std::pair<std::int64_t, TimeNs>>& alive,
                                             std::vector<GlooRun> runs, std::int64_t* placed_at_run_end) {
  auto lane_of = [&](const AllocatorEvent& e) { return e.source < lane_of_source.size() ? lane_of_source[e.source] : -1; };
  std::sort(runs.begin(), runs.end(), [](const GlooRun& a, const GlooRun& b) {
    return a.lane != b.lane ? a.lane < b.lane : a.issue_start < b.issue_start;
  });
  // The run whose issuing op (on lane `l`) holds time `t`: a thread's outermost ops do not overlap.
  auto run_issued_at = [&](int l, TimeNs t) -> const GlooRun* {
    auto it = std::upper_bound(runs.begin(), runs.end(), std::make_pair(l, t), [](const auto& key, const GlooRun& r) {
      return key.first != r.lane ? key.first < r.lane : key.second < r.issue_start;
    });
    if (it == runs.begin()) return nullptr;
    --it;
    return it->lane == l && t <= it->issue_end ? &*it : nullptr;
  };

  // Each allocation's free: the next free at its address.
  std::vector<std::size_t> free_of(events.size(), SIZE_MAX);
  {
    std::unordered_map<std::int64_t, std::size_t> open;
    for (std::size_t i = 0; i < events.size(); ++i) {
      if (events[i].bytes > 0) {
        open[events[i].address] = i;
      } else if (events[i].bytes < 0) {
        if (auto it = open.find(events[i].address); it != open.end()) {
          free_of[it->second] = i;
          open.erase(it);
        }
      }
    }
  }

  // Where each block is made: its thread, size, range (and the range's parent and occurrence in
  // the step), and which of the blocks of that size made there it is. The blocks freed, recorded,
  // in the step they are made in tell where their site's blocks are freed; a block's size and
  // range alone (its kind) tell whether such blocks ever outlive their step.
  using Site = std::tuple<int, std::int64_t, std::uint32_t, std::uint32_t, int, int>;
  using Kind = std::tuple<int, std::int64_t, std::uint32_t>;
  struct Lost {
    std::size_t alloc;
    int step;
    Site site;
    Kind kind;
  };
  struct KindFrees {
    int in_step = 0, later = 0;
  };
  std::map<std::tuple<int, int, std::int64_t, std::uint32_t, std::uint32_t, int>, int> made_there;
  std::map<Site, std::vector<ProgramPoints::Point>> freed_at;
  std::map<Kind, KindFrees> kind_frees;
  std::vector<Lost> lost;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const AllocatorEvent& a = events[i];
    const int l = lane_of(a);
    if (a.bytes <= 0 || a.synthetic || l < 0) continue;
    const ProgramPoints& points = lanes[static_cast<std::size_t>(l)];
    const auto p = points.at(a.time);
    if (!p) continue;
    const int nth = made_there[{l, p->step, a.bytes, p->parent, p->name, p->occurrence}]++;
    const Site site{l, a.bytes, p->parent, p->name, p->occurrence, nth};
    const Kind kind{l, a.bytes, p->name};
    const std::size_t f = free_of[i];
    if (f == SIZE_MAX || events[f].synthetic) {
      lost.push_back({i, p->step, site, kind});
    } else if (const auto fp = points.at(events[f].time); fp && fp->step == p->step) {
      freed_at[site].push_back(*fp);
      ++kind_frees[kind].in_step;
    } else {
      ++kind_frees[kind].later;
    }
  }

  std::vector<AllocatorEvent> added;
  std::int64_t moved_or_added = 0, at_run_end = 0;
  for (const Lost& m : lost) {
    const ProgramPoints& points = lanes[static_cast<std::size_t>(std::get<0>(m.site))];
    const AllocatorEvent& a = events[m.alloc];
    TimeNs t = kNoTime;
    // The nearest step's point (the earlier of two as near) that falls after the block was made.
    if (auto it = freed_at.find(m.site); it != freed_at.end()) {
      std::vector<ProgramPoints::Point> candidates = it->second;
      std::stable_sort(candidates.begin(), candidates.end(), [&](const auto& x, const auto& y) {
        return std::abs(x.step - m.step) < std::abs(y.step - m.step);
      });
      for (ProgramPoints::Point here : candidates) {
        here.step = m.step;
        if (const auto at = points.time_of(here); at && *at > a.time) {
          t = *at;
          break;
        }
      }
    }
    // Made inside a collective call, the block was the Work's: freed once the worker's run of it
    // had ended and the training thread had let go of the Work (the point, where there is one).
    const GlooRun* run = run_issued_at(std::get<0>(m.site), a.time);
    if (run && run->done > a.time) t = std::max(t, run->done);
    // Else its step's end, if blocks of its kind never outlive their step.
    if (t == kNoTime)
      if (auto k = kind_frees.find(m.kind); k != kind_frees.end() && k->second.in_step > 0 && k->second.later == 0)
        t = *points.time_of({m.step, kStepItself, ProgramPoints::kNone, 0, 1.0, -1});  // its last instant
    if (t == kNoTime || t <= a.time) continue;
    const std::size_t f = free_of[m.alloc];
    // A block the hooks' facts name (a parameter, a gradient, an optimizer state: the job's own
    // tensors, not a collective's buffer that gloo's worker lets go of) is alive as they say.
    const auto fact = std::lower_bound(alive.begin(), alive.end(), std::make_pair(a.address, a.time));
    if (fact != alive.end() && fact->first == a.address && (f == SIZE_MAX || fact->second < events[f].time)) continue;
    if (f != SIZE_MAX) {
      if (t >= events[f].time) continue;  // the reuse came first: it stays the bound
      events[f].time = t;
    } else {
      AllocatorEvent free = a;
      free.bytes = -a.bytes;
      free.time = t;
      free.total_allocated = -1;
      free.synthetic = true;
      added.push_back(free);
    }
    ++moved_or_added;
    if (run && t == run->done) ++at_run_end;
  }
  if (placed) *placed = moved_or_added;
  if (placed_at_run_end) *placed_at_run_end = at_run_end;
  if (moved_or_added == 0) return events;  // nothing moved: still in time order
  events.insert(events.end(), added.begin(), added.end());
  std::stable_sort(events.begin(), events.end(), [](const AllocatorEvent& x, const AllocatorEvent& y) { return x.time < y.time; });
  return events;
}

}  // namespace ss::import
