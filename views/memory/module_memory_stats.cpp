#include "views/memory/module_memory_stats.h"

#include <algorithm>
#include <unordered_map>

#include "storage/profile_reader.h"

namespace ss::memview {

bool column_is_time(int c) { return c == kForwardTime || c == kBackwardTime; }

const char* column_title(int c) {
  switch (c) {
    case kParamsSharded: return "Params sharded";
    case kParamsUnsharded: return "Params full";
    case kGradients: return "Grads";
    case kOptimizerStates: return "Optim state";
    case kActivations: return "Activations";
    case kAllGatherBuffers: return "AG buffers";
    case kPeakWhileRunning: return "Peak running";
    case kForwardTime: return "Fwd time";
    case kBackwardTime: return "Bwd time";
    default: return "";
  }
}

std::vector<MemoryEvent> read_memory_events(const Profile& p, int rank) {
  std::vector<MemoryEvent> rows;
  sql::Db db = open_profile_readonly(p.path);
  sql::Stmt s(db.get(), "SELECT time_ns, bytes, category, module_id, address FROM memory_events WHERE rank = ? ORDER BY time_ns, id");
  s.bind(1, rank);
  // A free is charged to what its allocation was charged to (module and category): producers
  // attribute an event to the module running when it happens, and a free that happens outside the
  // allocating module (after its range, at the optimizer step, between steps) would otherwise
  // never leave that module, which would then hold more than the rank's total.
  std::unordered_map<std::int64_t, std::pair<std::int32_t, int>> owner;  // live address -> (module, category)
  while (s.step()) {
    const int cat = static_cast<int>(s.col_int(2));
    MemoryEvent e{s.col_int(0), s.col_int(1), (cat >= 0 && cat < kMemoryCategoryCount) ? cat : 0,
                  s.col_null(3) ? -1 : p.module_index(s.col_int(3))};
    const std::int64_t address = s.col_null(4) ? 0 : s.col_int(4);
    if (address != 0 && e.bytes > 0) {
      owner[address] = {e.module, e.category};
    } else if (address != 0 && e.bytes < 0) {
      if (auto it = owner.find(address); it != owner.end()) {
        e.module = it->second.first;
        e.category = it->second.second;
        owner.erase(it);
      }
    }
    rows.push_back(e);
  }
  return rows;
}

namespace {

using LiveBytes = std::array<std::int64_t, kMemoryCategoryCount>;

// Appends points of the stacked per-category series: after each timestamp's events, at most one
// point per bucket of the window, at the bucket's highest total so that peaks survive the
// downsampling; keeps the series' peak.
class StackedSampler {
 public:
  StackedSampler(MemorySeries& s, TimeNs t0, TimeNs t1, std::size_t max_points)
      : s_(s),
        t0_(t0),
        bucket_(std::max(1.0, static_cast<double>(t1 - t0) / static_cast<double>(std::max<std::size_t>(1, max_points)))) {}

  void point(TimeNs t, const LiveBytes& live) {
    s_.times.push_back(t);
    for (int c = 0; c < kMemoryCategoryCount; ++c) s_.by_category[static_cast<std::size_t>(c)].push_back(live[static_cast<std::size_t>(c)]);
  }

  // The state after the last event at time t.
  void add(TimeNs t, const LiveBytes& live, std::int64_t total) {
    if (total > s_.peak_bytes) {
      s_.peak_bytes = total;
      s_.peak_time = t;
    }
    const long b = static_cast<long>(static_cast<double>(t - t0_) / bucket_);
    if (b != current_bucket_) {
      current_bucket_ = b;
      bucket_best_ = total;
      point(t, live);
    } else if (total > bucket_best_) {
      bucket_best_ = total;
      s_.times.back() = t;
      for (int c = 0; c < kMemoryCategoryCount; ++c) s_.by_category[static_cast<std::size_t>(c)].back() = live[static_cast<std::size_t>(c)];
    }
  }

 private:
  MemorySeries& s_;
  TimeNs t0_;
  double bucket_;
  long current_bucket_ = -1;
  std::int64_t bucket_best_ = 0;
};

std::int64_t max_in(const std::vector<CounterPoint>& c, TimeNs t0, TimeNs t1) {
  auto it = std::upper_bound(c.begin(), c.end(), t0, [](TimeNs t, const CounterPoint& p) { return t < p.time; });
  std::int64_t best = it != c.begin() ? std::prev(it)->value : 0;
  for (; it != c.end() && it->time <= t1; ++it) best = std::max(best, it->value);
  return best;
}

}  // namespace

ModuleMemoryStats compute_module_memory(const Profile& p, int rank, std::size_t max_points) {
  ModuleMemoryStats out;
  out.rank = rank;
  std::array<std::int64_t, kColumnCount> blank;
  blank.fill(kMissing);
  out.modules.assign(p.modules.size(), blank);
  const RankModel* rm = p.rank(rank);
  const int world = rm && rm->info.world_size > 0 ? rm->info.world_size : static_cast<int>(p.ranks.size());

  const std::vector<MemoryEvent> rows = read_memory_events(p, rank);
  std::array<bool, kMemoryCategoryCount> present{};
  for (const auto& r : rows) present[static_cast<std::size_t>(r.category)] = true;

  auto column_of = [](int category) {
    switch (static_cast<MemoryCategory>(category)) {
      case MemoryCategory::ShardedParameter: return static_cast<int>(kParamsSharded);
      case MemoryCategory::UnshardedParameter: return static_cast<int>(kParamsUnsharded);
      case MemoryCategory::Gradient: return static_cast<int>(kGradients);
      case MemoryCategory::OptimizerState: return static_cast<int>(kOptimizerStates);
      case MemoryCategory::Activation: return static_cast<int>(kActivations);
      case MemoryCategory::AllGatherBuffer: return static_cast<int>(kAllGatherBuffers);
      default: return -1;
    }
  };
  // Columns fed by a category the profile has start at 0 for every module (so "0" means none
  // was live there, while "—" means the profile cannot say). The figure is the peak of the bytes
  // live in that category attributed to the module or its descendants (allocations minus frees).
  for (int cat = 0; cat < kMemoryCategoryCount; ++cat)
    if (present[static_cast<std::size_t>(cat)] && column_of(cat) >= 0)
      for (auto& m : out.modules) m[static_cast<std::size_t>(column_of(cat))] = 0;
  {
    std::vector<std::array<std::int64_t, kColumnCount>> live(p.modules.size());
    for (auto& l : live) l.fill(0);
    for (const auto& r : rows) {
      const int col = column_of(r.category);
      if (col < 0 || r.module < 0) continue;
      for (std::int32_t i = r.module; i >= 0; i = p.modules[static_cast<std::size_t>(i)].parent) {
        auto& now = live[static_cast<std::size_t>(i)][static_cast<std::size_t>(col)];
        now += r.bytes;
        auto& peak = out.modules[static_cast<std::size_t>(i)][static_cast<std::size_t>(col)];
        peak = std::max(peak, now);
      }
    }
  }

  // Parameters: the module table's size (what the module owns, unsharded) and, for modules
  // inside an FSDP unit, the 1/world share each rank keeps, unless the profile records sharded
  // parameter memory itself (then the column above holds it).
  // A profile whose modules all have size 0 did not record sizes (e.g. imported from a trace).
  const bool have_sizes = std::any_of(p.modules.begin(), p.modules.end(), [](const ModuleNode& m) { return m.param_bytes > 0; });
  const bool have_sharded = present[static_cast<std::size_t>(MemoryCategory::ShardedParameter)];
  for (std::size_t i = 0; i < p.modules.size(); ++i) {
    const ModuleNode& m = p.modules[i];
    if (!have_sizes) continue;
    out.modules[i][kParamsUnsharded] = m.param_bytes;
    bool in_unit = m.is_fsdp_unit || m.fsdp_unit >= 0;
    if (!have_sharded) out.modules[i][kParamsSharded] = in_unit && world > 0 ? m.param_bytes / world : kMissing;
  }

  // Times and peaks from the module ranges of this rank.
  if (rm) {
    for (std::int32_t ti : rm->range_tracks)
      for (const RangeEvent& e : p.range_tracks[static_cast<std::size_t>(ti)].events) {
        if (e.kind != RangeKind::Module || e.module < 0) continue;
        auto& cells = out.modules[static_cast<std::size_t>(e.module)];
        const int col = e.phase == RangePhase::Forward ? kForwardTime
                        : (e.phase == RangePhase::Backward || e.phase == RangePhase::Recompute) ? kBackwardTime
                                                                                                : -1;
        if (col >= 0) cells[static_cast<std::size_t>(col)] = (cells[static_cast<std::size_t>(col)] == kMissing ? 0 : cells[static_cast<std::size_t>(col)]) + (e.end - e.start);
        if (!rm->memory.empty()) {
          const std::int64_t peak = max_in(rm->memory, e.start, e.end);
          auto& cell = cells[kPeakWhileRunning];
          cell = std::max(cell == kMissing ? 0 : cell, peak);
        }
      }
  }

  // A pipelined recording: the modules that did not run on this rank are other stages'.
  out.on_other_stage.assign(p.modules.size(), false);
  if (p.meta.count("rank" + std::to_string(rank) + ".pipeline")) {
    // A module is this rank's when it ran here, a descendant did (a container: torchtitan's
    // `layers` dict), or an ancestor below the root did (a submodule without ranges of its own).
    // The root runs on every stage: it says nothing about its children.
    const std::size_t n = p.modules.size();
    std::vector<bool> own(n, false), below(n, false), above(n, false);
    if (rm)
      for (std::int32_t ti : rm->range_tracks)
        for (const RangeEvent& e : p.range_tracks[static_cast<std::size_t>(ti)].events)
          if (e.kind == RangeKind::Module && e.module >= 0) own[static_cast<std::size_t>(e.module)] = true;
    for (std::size_t i = n; i-- > 0;) {  // children come after their parents
      below[i] = below[i] || own[i];
      if (below[i] && p.modules[i].parent >= 0) below[static_cast<std::size_t>(p.modules[i].parent)] = true;
    }
    for (std::size_t i = 0; i < n; ++i) {
      const std::int32_t parent = p.modules[i].parent;
      const bool parent_is_root = parent >= 0 && p.modules[static_cast<std::size_t>(parent)].parent < 0;
      above[i] = parent >= 0 && !parent_is_root && (own[static_cast<std::size_t>(parent)] || above[static_cast<std::size_t>(parent)]);
      out.on_other_stage[i] = !below[i] && !above[i];
    }
  }

  // The stacked series: bytes live per category after each event, sampled once per bucket at the
  // bucket's highest total so that peaks survive the downsampling.
  MemorySeries& s = out.series;
  s.present = present;
  if (!rows.empty()) {
    LiveBytes live{};
    std::int64_t total = 0;
    const TimeNs t0 = std::min(p.time_begin, rows.front().time), t1 = std::max(p.time_end, rows.back().time);
    StackedSampler sampler(s, t0, t1, max_points);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const auto& r = rows[i];
      live[static_cast<std::size_t>(r.category)] += r.bytes;
      total += r.bytes;
      // Only the state after the last event at one timestamp is real.
      if (i + 1 < rows.size() && rows[i + 1].time == r.time) continue;
      sampler.add(r.time, live, total);
    }
    // The innermost module range running at the peak.
    int best_depth = -1;
    if (rm)
      for (std::int32_t ti : rm->range_tracks) {
        const RangeTrack& t = p.range_tracks[static_cast<std::size_t>(ti)];
        for_each_in_window(t.events, t.max_duration, s.peak_time, s.peak_time, [&](const RangeEvent& e) {
          if (e.kind == RangeKind::Module && e.module >= 0 && t.depth > best_depth) {
            best_depth = t.depth;
            s.peak_module = e.module;
          }
        });
      }
  }
  if (rows.size() <= kMaxKeptEvents) out.events = std::make_shared<const std::vector<MemoryEvent>>(rows);
  return out;
}

MemorySeries sample_window(const std::vector<MemoryEvent>& events, TimeNs t0, TimeNs t1, std::size_t max_points) {
  MemorySeries s;
  if (t1 < t0) std::swap(t0, t1);
  for (const auto& e : events) s.present[static_cast<std::size_t>(e.category)] = true;
  LiveBytes live{};
  std::size_t i = 0;
  for (; i < events.size() && events[i].time <= t0; ++i) live[static_cast<std::size_t>(events[i].category)] += events[i].bytes;
  std::int64_t total = 0;
  for (auto v : live) total += v;
  StackedSampler sampler(s, t0, t1, max_points);
  sampler.point(t0, live);  // the state at the window's start
  s.peak_bytes = total;
  s.peak_time = t0;
  for (; i < events.size() && events[i].time <= t1; ++i) {
    const auto& r = events[i];
    live[static_cast<std::size_t>(r.category)] += r.bytes;
    total += r.bytes;
    if (i + 1 < events.size() && events[i + 1].time == r.time) continue;  // only the state after a timestamp is real
    sampler.add(r.time, live, total);
  }
  if (s.times.back() < t1) sampler.point(t1, live);  // and at its end
  return s;
}

ModuleSeries compute_module_series(const Profile& p, int rank, std::int32_t module, const std::vector<MemoryEvent>* events,
                                   std::size_t max_points) {
  ModuleSeries out;
  if (module < 0 || static_cast<std::size_t>(module) >= p.modules.size()) return out;
  out.module = module;
  // Which modules are the selected one or below it, decided once per module, not per event.
  std::vector<char> inside(p.modules.size(), 0);
  for (std::size_t m = 0; m < p.modules.size(); ++m)
    for (std::int32_t q = static_cast<std::int32_t>(m); q >= 0; q = p.modules[static_cast<std::size_t>(q)].parent)
      if (q == module) {
        inside[m] = 1;
        break;
      }
  std::vector<MemoryEvent> read;
  if (!events) read = read_memory_events(p, rank);
  const std::vector<MemoryEvent>& rows = events ? *events : read;
  if (!rows.empty()) {
    const TimeNs t0 = std::min(p.time_begin, rows.front().time), t1 = std::max(p.time_end, rows.back().time);
    const double bucket = std::max(1.0, static_cast<double>(t1 - t0) / static_cast<double>(std::max<std::size_t>(1, max_points)));
    std::int64_t live = 0;
    long current_bucket = -1;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const auto& r = rows[i];
      if (r.module >= 0 && inside[static_cast<std::size_t>(r.module)]) live += r.bytes;
      if (i + 1 < rows.size() && rows[i + 1].time == r.time) continue;  // only the state after a timestamp is real
      if (live > out.peak_bytes) {
        out.peak_bytes = live;
        out.peak_time = r.time;
      }
      const long b = static_cast<long>(static_cast<double>(r.time - t0) / bucket);
      if (b != current_bucket) {
        current_bucket = b;
        out.times.push_back(r.time);
        out.bytes.push_back(live);
      } else if (live > out.bytes.back()) {
        out.times.back() = r.time;
        out.bytes.back() = live;
      }
    }
  }
  if (const RankModel* rm = p.rank(rank))
    for (std::int32_t ti : rm->range_tracks)
      for (const RangeEvent& e : p.range_tracks[static_cast<std::size_t>(ti)].events)
        if (e.kind == RangeKind::Module && e.module == module) out.running.emplace_back(e.start, e.end);
  std::sort(out.running.begin(), out.running.end());
  return out;
}

std::vector<std::pair<TimeNs, TimeNs>> visible_runs(const std::vector<std::pair<TimeNs, TimeNs>>& running, TimeNs t0, TimeNs t1,
                                                    double min_gap) {
  std::vector<std::pair<TimeNs, TimeNs>> out;
  if (running.empty() || t1 < t0) return out;
  TimeNs longest = 0;
  for (const auto& [s, e] : running) longest = std::max(longest, e - s);
  // Sorted by start: a range overlapping t0 started at most `longest` before it.
  auto it = std::lower_bound(running.begin(), running.end(), t0 - longest, [](const auto& r, TimeNs t) { return r.first < t; });
  for (; it != running.end() && it->first <= t1; ++it) {
    if (it->second < t0) continue;
    const TimeNs s = std::max(it->first, t0), e = std::min(it->second, t1);
    if (!out.empty() && static_cast<double>(s - out.back().second) < min_gap)
      out.back().second = std::max(out.back().second, e);
    else
      out.emplace_back(s, e);
  }
  return out;
}

}  // namespace ss::memview
