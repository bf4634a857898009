#include "profiler/import/nsys/nsys_lanes.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "profiler/import/import.h"
#include "profiler/import/nsys/nsys_db.h"
#include "profiler/import/nsys/range_names.h"
#include "storage/add_nested_ranges.h"
#include "storage/range_nesting.h"

namespace ss::import::nsys {

void IntervalIndex::build(const std::vector<std::pair<TimeNs, TimeNs>>& intervals, const std::vector<RowId>& own_module) {
  const NestingResult n = nest_ranges(intervals);
  std::vector<std::int64_t> position(intervals.size(), -1);
  for (std::size_t k = 0; k < n.order.size(); ++k) position[n.order[k]] = static_cast<std::int64_t>(k);
  start_.resize(n.order.size());
  end_.resize(n.order.size());
  parent_.resize(n.order.size());
  module_.resize(n.order.size());
  for (std::size_t k = 0; k < n.order.size(); ++k) {  // parents come before their children
    const std::size_t i = n.order[k];
    start_[k] = intervals[i].first;
    end_[k] = intervals[i].second;
    parent_[k] = n.nesting[i].parent < 0 ? -1 : position[static_cast<std::size_t>(n.nesting[i].parent)];
    module_[k] = own_module[i] != kNoRow ? own_module[i] : (parent_[k] >= 0 ? module_[std::size_t(parent_[k])] : kNoRow);
  }
}

RowId IntervalIndex::module_at(TimeNs t) const {
  // The last interval that started by t, then up its ancestors to the first still open at t.
  auto it = std::upper_bound(start_.begin(), start_.end(), t);
  std::int64_t k = static_cast<std::int64_t>(it - start_.begin()) - 1;
  while (k >= 0 && end_[std::size_t(k)] < t) k = parent_[std::size_t(k)];
  return k < 0 ? kNoRow : module_[std::size_t(k)];
}

RowId Lanes::ensure_module(ImportContext& ctx, const std::string& fqn, bool fsdp_unit) {
  // Modules are shared by every input of one import (ctx.module_ids), so several ranks' files
  // write one module tree.
  auto& modules = ctx.module_ids;
  if (auto it = modules.find(fqn); it != modules.end()) return it->second;
  // The chain of missing ancestors, innermost first; created from the root down so that each
  // parent's id exists before its children. Absurdly deep names (damaged input) hang off the root.
  std::vector<std::string> chain{fqn};
  constexpr std::size_t kMaxDepth = 256;
  RowId parent = kNoRow;
  while (true) {
    std::optional<std::string> up = chain.size() < kMaxDepth ? parent_fqn(chain.back()) : std::optional<std::string>("");
    if (!up || chain.back().empty()) break;
    if (auto it = modules.find(*up); it != modules.end()) {
      parent = it->second;
      break;
    }
    chain.push_back(std::move(*up));
  }
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    ModuleRow m;
    m.fqn = *it;
    m.parent = parent;
    m.is_fsdp_unit = fsdp_unit && *it == fqn;
    parent = ctx.writer.add_module(m);
    modules.emplace(*it, parent);
  }
  return parent;
}

namespace {

struct LaneRange {
  std::size_t source = SIZE_MAX;  // index into ranges_, SIZE_MAX for a synthesised module range
  TimeNs start = 0, end = 0;
  std::string name;
  RangeKind kind = RangeKind::Annotation;
  RangePhase phase = RangePhase::None;
  RowId module = kNoRow;
};

RangeKind kind_of(const NvtxRange& r, const FsdpRangeName& fsdp) {
  if (fsdp.hook != FsdpHook::None) return RangeKind::Fsdp;
  if (r.nccl) return RangeKind::Nccl;
  if (r.name.rfind("aten::", 0) == 0) return RangeKind::CpuOp;
  return RangeKind::Annotation;
}

}  // namespace

void Lanes::write(ImportContext& ctx, TimeNs offset) {
  ProfileWriter& w = ctx.writer;
  std::map<std::int64_t, std::vector<std::size_t>> by_thread;  // global tid -> range indices
  for (std::size_t i = 0; i < ranges_.size(); ++i) by_thread[ranges_[i].global_tid].push_back(i);

  // 1. Per thread: classify, and pair FSDP pre/post hooks into Module ranges.
  std::map<std::int64_t, std::vector<LaneRange>> lanes;
  for (auto& [tid, idx] : by_thread) {
    std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return ranges_[a].start < ranges_[b].start; });
    std::map<std::string, std::size_t> open_forward, open_backward;  // fqn -> pre hook index
    auto& lane = lanes[tid];
    for (std::size_t i : idx) {
      const NvtxRange& r = ranges_[i];
      const FsdpRangeName fsdp = parse_fsdp_range_name(r.name);
      LaneRange lr;
      lr.source = i;
      lr.start = r.start;
      lr.end = r.end;
      lr.name = r.name;
      lr.kind = kind_of(r, fsdp);
      lr.phase = phase_of(fsdp.hook);
      if (fsdp.hook != FsdpHook::None && (!fsdp.fqn.empty() || r.name.find("()") != std::string::npos))
        lr.module = ensure_module(ctx, fsdp.fqn, fsdp.hook != FsdpHook::Other);
      lane.push_back(lr);
      auto pair_up = [&](std::map<std::string, std::size_t>& open, bool is_pre, RangePhase phase) {
        if (is_pre) {
          open[fsdp.fqn] = i;
          return;
        }
        auto it = open.find(fsdp.fqn);
        if (it == open.end()) return;
        LaneRange m;
        m.start = ranges_[it->second].start;
        m.end = std::max(r.end, m.start);
        m.name = fsdp.fqn.empty() ? "<root>" : fsdp.fqn;
        m.kind = RangeKind::Module;
        m.phase = phase;
        m.module = lr.module;
        lane.push_back(m);
        open.erase(it);
      };
      if (fsdp.hook == FsdpHook::PreForward || fsdp.hook == FsdpHook::PostForward)
        pair_up(open_forward, fsdp.hook == FsdpHook::PreForward, RangePhase::Forward);
      if (fsdp.hook == FsdpHook::PreBackward || fsdp.hook == FsdpHook::PostBackward)
        pair_up(open_backward, fsdp.hook == FsdpHook::PreBackward, RangePhase::Backward);
    }
  }

  // 2. Recompute: a forward range inside a backward module range of the same rank (activation
  //    checkpointing re-runs the forward from the backward pass).
  std::map<int, std::vector<std::pair<TimeNs, TimeNs>>> backward;
  for (auto& [tid, lane] : lanes) {
    const int rank = rank_of_pid_.at(process_key(tid));
    for (const auto& lr : lane)
      if (lr.kind == RangeKind::Module && lr.phase == RangePhase::Backward) backward[rank].emplace_back(lr.start, lr.end);
  }
  for (auto& [rank, v] : backward) std::sort(v.begin(), v.end());
  for (auto& [tid, lane] : lanes) {
    auto b = backward.find(rank_of_pid_.at(process_key(tid)));
    if (b == backward.end()) continue;
    for (auto& lr : lane) {
      if (lr.phase != RangePhase::Forward) continue;
      for (const auto& [s, e] : b->second) {
        if (s > lr.start) break;
        if (e >= lr.end) {
          lr.phase = RangePhase::Recompute;
          break;
        }
      }
    }
  }

  // 3. Nest and write each lane; index modules per thread and per rank; collect NCCL calls.
  std::map<int, std::vector<std::pair<TimeNs, TimeNs>>> rank_intervals;
  std::map<int, std::vector<RowId>> rank_modules;
  for (auto& [tid, lane] : lanes) {
    const int rank = rank_of_pid_.at(process_key(tid));
    ThreadInfo ti;
    ti.rank = rank;
    ti.tid = tid_of(tid);
    if (auto it = thread_names_.find(tid); it != thread_names_.end()) ti.name = it->second;
    const RowId thread = w.add_thread(ti);
    thread_rows_[tid] = thread;

    std::vector<std::pair<TimeNs, TimeNs>> intervals;
    std::vector<RowId> own;
    intervals.reserve(lane.size());
    for (const auto& lr : lane) {
      intervals.emplace_back(lr.start, lr.end);
      own.push_back(lr.kind == RangeKind::Module || lr.kind == RangeKind::Fsdp ? lr.module : kNoRow);
      if (own.back() != kNoRow) {
        rank_intervals[rank].emplace_back(lr.start, lr.end);
        rank_modules[rank].push_back(lr.module);
      }
    }
    const auto& lane_ranges = lane;  // clang 14 (the fuzz build) cannot capture a structured binding
    add_nested_ranges(w, intervals, [&](std::size_t i) {
      const LaneRange& lr = lane_ranges[i];
      RangeRow rr;
      rr.rank = rank;
      rr.thread = thread;
      rr.start = lr.start + offset;
      rr.end = lr.end + offset;
      rr.name = w.intern(lr.name);
      rr.kind = lr.kind;
      rr.phase = lr.phase;
      rr.module = (lr.kind == RangeKind::Module || lr.kind == RangeKind::Fsdp) ? lr.module : kNoRow;
      if (auto step = profiler_step_number(lr.name)) w.add_step(StepRow{rank, *step, rr.start, rr.end});
      return rr;
    });
    by_thread_[tid].build(intervals, own);

    auto& calls = nccl_by_thread_[tid];
    for (const auto& lr : lane) {
      if (lr.source == SIZE_MAX || lr.kind != RangeKind::Nccl) continue;
      const NvtxRange& r = ranges_[lr.source];
      calls.push_back(NcclCall{r.start, r.end, r.name, r.payload});
      if (is_comm_creation(r.name) && r.payload.comm && r.payload.nranks && *r.payload.nranks > 0 &&
          *r.payload.nranks <= (1 << 20))
        comm_size_[*r.payload.comm] = static_cast<int>(*r.payload.nranks);
    }
    if (calls.empty()) nccl_by_thread_.erase(tid);
  }
  for (auto& [rank, iv] : rank_intervals) by_rank_[rank].build(iv, rank_modules[rank]);
  ranges_.clear();
  ranges_.shrink_to_fit();
}

RowId Lanes::module_at(std::int64_t global_tid, TimeNs t) const {
  auto it = by_thread_.find(global_tid);
  return it == by_thread_.end() ? kNoRow : it->second.module_at(t);
}

RowId Lanes::module_on_rank_at(int rank, TimeNs t) const {
  auto it = by_rank_.find(rank);
  return it == by_rank_.end() ? kNoRow : it->second.module_at(t);
}

NcclPayload Lanes::nccl_payload_at(std::int64_t global_tid, TimeNs t) const {
  auto it = nccl_by_thread_.find(global_tid);
  if (it == nccl_by_thread_.end()) return {};
  const auto& calls = it->second;
  auto ub = std::upper_bound(calls.begin(), calls.end(), t, [](TimeNs v, const NcclCall& c) { return v < c.start; });
  // The innermost call open at t: NCCL API ranges nest shallowly, so look back a little.
  std::int64_t k = static_cast<std::int64_t>(ub - calls.begin()) - 1;
  for (std::int64_t back = 0; k >= 0 && back < 64; --k, ++back)
    if (calls[std::size_t(k)].end >= t) break;
  if (k < 0 || calls[std::size_t(k)].end < t) return {};
  const NcclCall& call = calls[std::size_t(k)];
  if (call.payload.bytes || call.name != "ncclGroupEnd") return call.payload;
  // Grouped launch: the payloads of the calls since the matching ncclGroupStart.
  std::int64_t g = k - 1;
  while (g >= 0 && calls[std::size_t(g)].name != "ncclGroupStart") --g;
  if (g < 0) return {};
  NcclPayload sum;
  for (std::int64_t j = g + 1; j < k; ++j) {
    const NcclPayload& p = calls[std::size_t(j)].payload;
    std::int64_t total = 0;
    if (p.bytes && !__builtin_add_overflow(sum.bytes.value_or(0), *p.bytes, &total)) sum.bytes = total;
    if (p.comm && !sum.comm) sum.comm = p.comm;
  }
  return sum;
}

int Lanes::comm_size(std::uint64_t comm) const {
  auto it = comm_size_.find(comm);
  return it == comm_size_.end() ? 0 : it->second;
}

RowId Lanes::thread_row(ImportContext& ctx, std::int64_t global_tid) {
  if (auto it = thread_rows_.find(global_tid); it != thread_rows_.end()) return it->second;
  auto rank = rank_of_pid_.find(process_key(global_tid));
  if (rank == rank_of_pid_.end()) return kNoRow;
  ThreadInfo ti;
  ti.rank = rank->second;
  ti.tid = tid_of(global_tid);
  if (auto it = thread_names_.find(global_tid); it != thread_names_.end()) ti.name = it->second;
  const RowId id = ctx.writer.add_thread(ti);
  thread_rows_.emplace(global_tid, id);
  return id;
}

}  // namespace ss::import::nsys
