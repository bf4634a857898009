#include "profiler/sim/profile_extract.h"

#include <algorithm>
#include <limits>
#include <map>

#include "profiler/sim/device_table.h"
#include "storage/errors.h"
#include "storage/profile_reader.h"
#include "storage/sqlite_handle.h"

namespace ss::sim {
namespace {

[[noreturn]] void unusable(const Profile& p, const std::string& why) {
  throw ProfileError(ProfileErrorKind::MalformedTable, p.path + ": cannot simulate this profile: " + why);
}

using Interval = std::pair<TimeNs, TimeNs>;

// Busy time of the union of intervals clipped to [a, b].
TimeNs busy_in(const std::vector<Interval>& iv, TimeNs a, TimeNs b) {
  auto it = std::lower_bound(iv.begin(), iv.end(), Interval{a, std::numeric_limits<TimeNs>::min()});
  if (it != iv.begin()) --it;
  TimeNs total = 0, cur_s = 0, cur_e = -1;
  bool open = false;
  for (; it != iv.end() && it->first < b; ++it) {
    const TimeNs s = std::max(it->first, a), e = std::min(it->second, b);
    if (e <= s) continue;
    if (open && s <= cur_e) {
      cur_e = std::max(cur_e, e);
    } else {
      if (open) total += cur_e - cur_s;
      cur_s = s, cur_e = e, open = true;
    }
  }
  if (open) total += cur_e - cur_s;
  return total;
}


}  // namespace

ProfileInput extract_profile(const Profile& p) {
  if (p.ranks.empty()) unusable(p, "it has no ranks");
  ProfileInput in;
  in.origin = p.origin.kind;
  const RankModel& rk = p.ranks.front();
  in.rank = rk.info.rank;
  in.world_size = rk.info.world_size > 0 ? rk.info.world_size : static_cast<int>(p.ranks.size());
  in.gpu_name = rk.info.gpu_name;

  // FSDP units: each module belongs to its nearest unit ancestor (itself included).
  const std::size_t nm = p.modules.size();
  std::vector<int> unit_of(nm, -1);
  for (std::size_t i = 0; i < nm; ++i) {  // parents come before children
    const auto& m = p.modules[i];
    if (m.is_fsdp_unit) unit_of[i] = static_cast<int>(i);
    else if (m.parent >= 0) unit_of[i] = unit_of[static_cast<std::size_t>(m.parent)];
  }
  std::map<int, int> unit_index;  // module index -> SimModel unit
  SimModel& sm = in.model;
  sm.name = p.path;
  for (std::size_t i = 0; i < nm; ++i) {
    if (!p.modules[i].is_fsdp_unit) continue;
    const auto& m = p.modules[i];
    // Own parameters: the unit's bytes minus nested units', or the sum over its direct non-unit
    // children when the unit row itself carries no bytes (a root often does not).
    std::int64_t nested = 0, children = 0;
    for (std::int32_t c : m.children) {
      const auto& cm = p.modules[static_cast<std::size_t>(c)];
      if (cm.is_fsdp_unit) nested += cm.param_bytes;
      else children += cm.param_bytes;
    }
    std::int64_t own = std::max(m.param_bytes - nested, children);
    // The root unit is the model itself; top-level units under a non-unit model are not roots.
    const bool root = m.parent < 0;
    // Greedy planning tries a unit's non-unit parent (layers.3 for layers.3.attention) as a whole.
    std::string group = m.fqn;
    if (!root && !p.modules[static_cast<std::size_t>(m.parent)].is_fsdp_unit && p.modules[static_cast<std::size_t>(m.parent)].parent >= 0)
      group = p.modules[static_cast<std::size_t>(m.parent)].fqn;
    unit_index[static_cast<int>(i)] = static_cast<int>(sm.units.size());
    sm.units.push_back({m.fqn, group, m.class_name, own / sm.param_dtype_bytes, root});
  }
  if (sm.units.empty()) unusable(p, "no module is marked as an FSDP unit (modules.is_fsdp_unit)");

  // Compute intervals of this rank (compute streams; any non-NCCL stream when none is marked).
  std::vector<Interval> compute;
  bool any_marked = false;
  for (std::int32_t ti : rk.stream_tracks) any_marked |= p.stream_tracks[static_cast<std::size_t>(ti)].kind == StreamKind::Compute;
  for (std::int32_t ti : rk.stream_tracks) {
    const auto& t = p.stream_tracks[static_cast<std::size_t>(ti)];
    if (any_marked ? t.kind != StreamKind::Compute : t.kind == StreamKind::Nccl) continue;
    for (const auto& k : t.events)
      if (k.category != KernelCategory::Collective) compute.emplace_back(k.start, k.end);
  }
  std::sort(compute.begin(), compute.end());

  // Steps: skip the first (warm-up) when there are several.
  std::vector<StepRow> steps = rk.steps;
  if (steps.empty()) steps.push_back({rk.info.rank, 0, p.time_begin, p.time_end});
  if (steps.size() > 1) steps.erase(steps.begin());
  in.steps_used = static_cast<int>(steps.size());

  // Module ranges of this rank whose module is a unit.
  struct UnitRange { TimeNs start, end; int unit; RangePhase phase; };
  std::vector<UnitRange> ranges;
  for (std::int32_t ti : rk.range_tracks) {
    for (const auto& r : p.range_tracks[static_cast<std::size_t>(ti)].events) {
      if (r.kind != RangeKind::Module || r.module < 0) continue;
      auto it = unit_index.find(r.module);
      if (it == unit_index.end()) continue;
      if (r.phase != RangePhase::Forward && r.phase != RangePhase::Backward) continue;
      ranges.push_back({r.start, r.end, it->second, r.phase});
    }
  }
  std::sort(ranges.begin(), ranges.end(), [](const UnitRange& a, const UnitRange& b) { return a.start < b.start; });
  if (ranges.empty()) unusable(p, "it has no forward/backward module ranges for its FSDP units");

  const int nu = static_cast<int>(sm.units.size());
  std::vector<double> fwd(static_cast<std::size_t>(nu), 0), bwd(static_cast<std::size_t>(nu), 0);
  std::vector<TimeNs> first_fwd(static_cast<std::size_t>(nu), std::numeric_limits<TimeNs>::max());
  double head_f = 0, tail = 0, head_b = 0, opt = 0, step_total = 0;
  int root = -1;
  for (int u = 0; u < nu; ++u)
    if (sm.units[static_cast<std::size_t>(u)].is_root) root = u;
  for (std::size_t i = 0; i < nm; ++i)
    if (unit_of[i] >= 0) in.unit_of_module.emplace_back(p.modules[i].id, unit_index[unit_of[i]]);
  for (const auto& st : steps) in.step_windows.emplace_back(st.start, st.end);
  for (const auto& st : steps) {
    step_total += double(st.end - st.start);
    TimeNs fwd_lo = std::numeric_limits<TimeNs>::max(), fwd_hi = st.start, bwd_lo = std::numeric_limits<TimeNs>::max(), bwd_hi = st.start;
    for (const auto& r : ranges) {
      if (r.start < st.start || r.end > st.end) continue;
      if (sm.units[static_cast<std::size_t>(r.unit)].is_root) continue;  // the root's range spans the others
      TimeNs busy = busy_in(compute, r.start, r.end);
      if (busy == 0) busy = r.end - r.start;  // CPU-only ranges: fall back to their span
      auto& v = r.phase == RangePhase::Forward ? fwd : bwd;
      v[static_cast<std::size_t>(r.unit)] += double(busy);
      if (r.phase == RangePhase::Forward) {
        fwd_lo = std::min(fwd_lo, r.start), fwd_hi = std::max(fwd_hi, r.end);
        first_fwd[static_cast<std::size_t>(r.unit)] = std::min(first_fwd[static_cast<std::size_t>(r.unit)], r.start - st.start);
      } else {
        bwd_lo = std::min(bwd_lo, r.start), bwd_hi = std::max(bwd_hi, r.end);
      }
    }
    if (fwd_lo == std::numeric_limits<TimeNs>::max()) continue;
    if (bwd_lo == std::numeric_limits<TimeNs>::max()) bwd_lo = bwd_hi = fwd_hi;
    // Optimizer: its range when present, else compute after the last backward range.
    TimeNs opt_start = bwd_hi;
    for (const auto& tr : rk.range_tracks)
      for (const auto& r : p.range_tracks[static_cast<std::size_t>(tr)].events)
        if (r.phase == RangePhase::Optimizer && r.start >= st.start && r.start < st.end) opt_start = std::max(bwd_hi, r.start);
    head_f += double(busy_in(compute, st.start, fwd_lo));
    tail += double(busy_in(compute, fwd_hi, bwd_lo));
    head_b += double(busy_in(compute, bwd_hi, opt_start));
    opt += double(busy_in(compute, opt_start, st.end));
  }
  const double ns_steps = double(std::max<std::size_t>(1, steps.size()));
  in.measured_step_ns = static_cast<TimeNs>(step_total / ns_steps);
  if (root < 0) {  // no root unit: add an empty one so head/tail compute has an owner
    sm.units.push_back({"", "", "root", 0, true});
    root = nu;
  }
  // Segments: root head, units by first forward range, root tail.
  std::vector<int> order;
  for (int u = 0; u < nu; ++u)
    if (u != root && first_fwd[static_cast<std::size_t>(u)] != std::numeric_limits<TimeNs>::max()) order.push_back(u);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return first_fwd[static_cast<std::size_t>(a)] < first_fwd[static_cast<std::size_t>(b)]; });
  if (order.empty()) unusable(p, "no forward module range of an FSDP unit lies inside a step");
  auto avg = [&](double v) { return static_cast<TimeNs>(v / ns_steps); };
  sm.segments.push_back({root, avg(head_f), avg(head_b), 0, 0});
  for (int u : order) sm.segments.push_back({u, avg(fwd[static_cast<std::size_t>(u)]), avg(bwd[static_cast<std::size_t>(u)]), 0, 0});
  // The stretch between forward and backward (output head, loss) splits 1:2 like its FLOPs.
  sm.segments.push_back({root, avg(tail / 3), avg(tail - tail / 3), 0, 0});
  sm.optimizer_ns = avg(opt);
  sm.optimizer_reference_world = in.world_size;
  sm.hbm_bytes_per_ns = 0;  // measured compute already contains FSDP's copy-in / copy-out kernels

  for (const auto& c : p.collectives) {
    if (c.rank != in.rank || c.end <= c.start) continue;
    Coll t;
    if (c.type == CollectiveType::AllGather) t = Coll::AllGather;
    else if (c.type == CollectiveType::ReduceScatter) t = Coll::ReduceScatter;
    else if (c.type == CollectiveType::AllReduce) t = Coll::AllReduce;
    else continue;
    in.collectives.push_back({t, c.bytes, in.world_size, c.end - c.start});
  }
  return in;
}

std::int64_t add_activations_from_profile(ProfileInput& in, const std::string& path) {
  sql::Db db = open_profile_readonly(path);
  sql::Stmt st(db.get(),
               "SELECT module_id, time_ns, bytes FROM memory_events WHERE rank = ?1 AND category = ?2 AND bytes > 0 "
               "AND module_id IS NOT NULL");
  st.bind(1, in.rank);
  st.bind(2, static_cast<int>(MemoryCategory::Activation));
  std::map<RowId, int> unit_of(in.unit_of_module.begin(), in.unit_of_module.end());
  std::vector<double> bytes(in.model.units.size(), 0);
  double total = 0;
  while (st.step()) {
    auto it = unit_of.find(st.col_int(0));
    if (it == unit_of.end()) continue;
    const TimeNs t = st.col_int(1);
    bool inside = false;
    for (const auto& [a, b] : in.step_windows) inside = inside || (t >= a && t <= b);
    if (!inside) continue;
    bytes[static_cast<std::size_t>(it->second)] += double(st.col_int(2));
    total += double(st.col_int(2));
  }
  const double n = double(std::max<std::size_t>(1, in.step_windows.size()));
  for (auto& seg : in.model.segments) {
    double& b = bytes[static_cast<std::size_t>(seg.unit)];
    seg.saved_activation_bytes = static_cast<std::int64_t>(b / n);  // the first segment of a unit takes it all
    b = 0;
  }
  return static_cast<std::int64_t>(total / n);
}

}  // namespace ss::sim
