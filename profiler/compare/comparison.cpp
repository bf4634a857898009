#include "profiler/compare/comparison.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>

#include "profiler/compare/interval_set.h"
#include "storage/profile_reader.h"

namespace ss::compare {
namespace {

// One side's numbers for one row.
struct Cell {
  std::int64_t count = 0;
  TimeNs time = 0;
  TimeNs first = std::numeric_limits<TimeNs>::max();  // earliest start (modules only)
};

// What one side contributes to every table, keyed so the two sides can be matched by name.
struct SideTables {
  std::map<std::pair<std::string, int>, Cell> modules;  // (fqn, phase)
  std::unordered_map<std::string, Cell> kernels;       // name
  std::map<std::tuple<int, std::string, std::int64_t>, Cell> collectives;  // (type, group, bytes)
  TimeNs compute = 0, communication = 0, exposed = 0;
};

void collect_modules(const Profile& p, const RankModel& r, const Window& w, SideTables& out) {
  std::map<std::pair<std::int32_t, int>, std::vector<Interval>> spans;  // (module index, phase)
  for (std::int32_t t : r.range_tracks) {
    for (const RangeEvent& e : p.range_tracks[static_cast<std::size_t>(t)].events) {
      if (e.kind != RangeKind::Module || e.module < 0) continue;
      const Interval c = w.clip(e.start, e.end);
      if (c.second <= c.first) continue;
      spans[{e.module, static_cast<int>(e.phase)}].push_back(c);
    }
  }
  for (auto& [key, v] : spans) {
    const std::int64_t count = static_cast<std::int64_t>(v.size());
    merge_intervals(v);
    Cell& slot = out.modules[{p.modules[static_cast<std::size_t>(key.first)].fqn, key.second}];
    slot.count += count;
    slot.time += total_length(v);
    slot.first = std::min(slot.first, v.front().first);
  }
}

void collect_kernels(const Profile& p, const RankModel& r, const Window& w, SideTables& out) {
  // Aggregate by interned name id first (cheap), then translate ids to names once.
  std::vector<std::pair<std::int64_t, TimeNs>> by_name(p.strings.size());
  std::vector<Interval> compute, collective;
  for (std::int32_t t : r.stream_tracks) {
    const auto& events = p.stream_tracks[static_cast<std::size_t>(t)].events;
    for (const KernelEvent& k : events) {
      if (w.contains_start(k.start) && k.name < by_name.size()) {
        ++by_name[k.name].first;
        by_name[k.name].second += k.end - k.start;
      }
      if (k.category != KernelCategory::Compute && k.category != KernelCategory::Collective) continue;
      const Interval c = w.clip(k.start, k.end);
      if (c.second <= c.first) continue;
      (k.category == KernelCategory::Compute ? compute : collective).push_back(c);
    }
  }
  for (std::uint32_t id = 0; id < by_name.size(); ++id) {
    if (by_name[id].first == 0) continue;
    Cell& slot = out.kernels[std::string(p.strings[id])];
    slot.count += by_name[id].first;
    slot.time += by_name[id].second;
  }
  if (collective.empty()) {
    // A profile whose collectives have no kernel rows (e.g. CPU-side NCCL ranges only) still has
    // their intervals in the collectives table.
    for (const CollectiveEvent& c : p.collectives) {
      if (c.rank != r.info.rank) continue;
      const Interval x = w.clip(c.start, c.end);
      if (x.second > x.first) collective.push_back(x);
    }
  }
  merge_intervals(compute);
  merge_intervals(collective);
  out.compute = total_length(compute);
  out.communication = total_length(collective);
  out.exposed = out.communication - intersection_length(collective, compute);
}

void collect_collectives(const Profile& p, const RankModel& r, const Window& w, SideTables& out) {
  std::map<RowId, std::string> labels;
  for (auto& [id, label] : read_process_group_labels(p.path)) labels[id] = label;
  for (const CollectiveEvent& c : p.collectives) {
    if (c.rank != r.info.rank || !w.contains_start(c.start)) continue;
    std::string pg;
    if (c.process_group >= 0) {
      auto it = labels.find(c.process_group);
      pg = it != labels.end() ? it->second : "#" + std::to_string(c.process_group);
    }
    Cell& slot = out.collectives[{static_cast<int>(c.type), pg, c.bytes}];
    ++slot.count;
    slot.time += c.end - c.start;
  }
}

SideTables collect(const Profile& p, const Window& w) {
  const RankModel& r = *p.rank(w.rank);  // resolve_alignment checked it exists
  SideTables t;
  collect_modules(p, r, w, t);
  collect_kernels(p, r, w, t);
  collect_collectives(p, r, w, t);
  return t;
}

// Largest absolute difference first; ties in a stable, readable order (by key).
template <typename Row, typename KeyLess>
void sort_by_discrepancy(std::vector<Row>& rows, KeyLess key_less) {
  std::sort(rows.begin(), rows.end(), [&](const Row& x, const Row& y) {
    const TimeNs dx = std::llabs(x.time.delta()), dy = std::llabs(y.time.delta());
    if (dx != dy) return dx > dy;
    return key_less(x, y);
  });
}

// Outer join of two keyed maps: every key of either side becomes one row.
template <typename Map, typename MakeRow>
auto join(const Map& a, const Map& b, MakeRow make_row) {
  using Row = decltype(make_row(a.begin()->first));
  std::vector<Row> rows;
  auto put = [&](const auto& key, const Cell* va, const Cell* vb) {
    Row row = make_row(key);
    if (va) row.count_a = va->count, row.time.a = va->time;
    if (vb) row.count_b = vb->count, row.time.b = vb->time;
    if constexpr (requires { row.first_a; }) {
      if (va) row.first_a = va->first;
      if (vb) row.first_b = vb->first;
    }
    rows.push_back(std::move(row));
  };
  for (const auto& [key, va] : a) {
    auto it = b.find(key);
    put(key, &va, it != b.end() ? &it->second : nullptr);
  }
  for (const auto& [key, vb] : b)
    if (a.find(key) == a.end()) put(key, nullptr, &vb);
  return rows;
}

}  // namespace

std::vector<std::pair<RowId, std::string>> read_process_group_labels(const std::string& path) {
  std::vector<std::pair<RowId, std::string>> out;
  if (path.empty()) return out;
  try {
    sql::Db db = open_profile_readonly(path);
    sql::Stmt st(db.get(), "SELECT id, COALESCE(name, ''), COALESCE(description, '') FROM process_groups ORDER BY id");
    while (st.step()) {
      std::string name = st.col_text(1), desc = st.col_text(2);
      std::string label = name;
      if (!desc.empty()) label = label.empty() ? desc : label + " (" + desc + ")";
      out.emplace_back(st.col_int(0), label);
    }
  } catch (const ProfileError&) {
    out.clear();  // labels are a nicety; ids still distinguish the groups
  }
  return out;
}

Comparison compare_profiles(const Profile& a, const Profile& b, const Alignment& alignment) {
  Comparison c;
  c.path_a = a.path;
  c.path_b = b.path;
  c.requested = alignment;
  c.alignment = resolve_alignment(a, b, alignment);
  const SideTables ta = collect(a, c.alignment.a);
  const SideTables tb = collect(b, c.alignment.b);

  c.headline.step_time = {c.alignment.a.length(), c.alignment.b.length()};
  c.headline.compute = {ta.compute, tb.compute};
  c.headline.communication = {ta.communication, tb.communication};
  c.headline.exposed_communication = {ta.exposed, tb.exposed};

  c.modules = join(ta.modules, tb.modules, [](const std::pair<std::string, int>& k) {
    ModuleDiff d;
    d.fqn = k.first;
    d.phase = static_cast<RangePhase>(k.second);
    return d;
  });
  sort_by_discrepancy(c.modules, [](const ModuleDiff& x, const ModuleDiff& y) {
    return std::tie(x.fqn, x.phase) < std::tie(y.fqn, y.phase);
  });

  c.kernels = join(ta.kernels, tb.kernels, [](const std::string& k) {
    KernelDiff d;
    d.name = k;
    return d;
  });
  sort_by_discrepancy(c.kernels, [](const KernelDiff& x, const KernelDiff& y) { return x.name < y.name; });

  c.collectives = join(ta.collectives, tb.collectives, [](const std::tuple<int, std::string, std::int64_t>& k) {
    CollectiveDiff d;
    d.type = static_cast<CollectiveType>(std::get<0>(k));
    d.process_group = std::get<1>(k);
    d.bytes = std::get<2>(k);
    return d;
  });
  sort_by_discrepancy(c.collectives, [](const CollectiveDiff& x, const CollectiveDiff& y) {
    return std::tie(x.type, x.process_group, x.bytes) < std::tie(y.type, y.process_group, y.bytes);
  });
  return c;
}

}  // namespace ss::compare
