// import_torch_snapshot: a PyTorch memory snapshot pickle (torch.cuda.memory._dump_snapshot)
// into memory events, one rank per device. The rules (docs/importers.md):
//  - an allocation lives from its `alloc` to its `free_completed` (free_requested only marks a
//    block pending on another stream; memory_viz's active-memory timeline does the same);
//  - a free_completed without an alloc in the trace, and a block still allocated in `segments`
//    with no alloc in the trace, were allocated before the trace began (the history is a ring
//    buffer): each becomes an allocation at the device's first trace time, so the level and the
//    peak start from what was really live;
//  - an allocation's bytes are the caching allocator's block (what torch.cuda.memory_allocated
//    counts), not the traced request: rounded to 512 B, plus a large-pool block's unsplit
//    remainder (snapshot_blocks.h), where the snapshot says the allocator's rules are the default;
//  - time_us (unix-epoch µs) becomes ns on the profile clock; the events of one microsecond keep
//    their trace order 1 ns apart (so a block freed and another allocated in one µs are not
//    reordered); a snapshot without time_us (older PyTorch) places events 1 µs apart in order;
//  - record_function ranges in external_annotations become ranges on a "record_function" lane,
//    and name the module (ShardScope's "ss:fwd:<fqn>" hook ranges) and the FSDP / optimizer
//    context (memory_categories.h) of what is allocated inside them;
//  - otherwise the allocation's Python frames name its module (snapshot_modules.h).
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "profiler/common/fsdp_range_name.h"
#include "profiler/common/memory_categories.h"
#include "profiler/common/module_range_name.h"
#include "profiler/import/common/input_file.h"
#include "profiler/import/import.h"
#include "profiler/import/snapshot/pickle_reader.h"
#include "profiler/import/snapshot/snapshot_blocks.h"
#include "profiler/import/snapshot/snapshot_import.h"
#include "profiler/import/snapshot/snapshot_model.h"
#include "profiler/import/snapshot/snapshot_modules.h"
#include "storage/add_nested_ranges.h"

namespace ss::import {

namespace snapshot {

namespace {

constexpr std::int64_t kMaxDevice = 1 << 16;           // device indices above this are refused
constexpr std::int64_t kMaxSpanUs = 1'000'000'000'000'000;  // ~31 years: times beyond are refused
constexpr std::size_t kMaxAnnotationDepth = 256;        // deeper record_function nesting is skipped
constexpr std::size_t kMaxFqn = 4096;

// The memory profiler's categories (torch.profiler._memory_profiler.Category, lower-cased by
// _profile_to_snapshot) in ShardScope's terms.
MemoryCategory category_of(const std::string& c) {
  if (c == "activation") return MemoryCategory::Activation;
  if (c == "gradient") return MemoryCategory::Gradient;
  if (c == "optimizer_state") return MemoryCategory::OptimizerState;
  if (c == "parameter") return MemoryCategory::ShardedParameter;  // the parameters as stored
  if (c == "temporary") return MemoryCategory::Temporary;
  return MemoryCategory::Unknown;
}

// "FSDP::pre_forward (layers.3)" -> action "pre_forward", fqn "layers.3" (has_fqn false without "(...)").
struct FsdpName {
  std::string action;  // a copy: the caller's ranges may move while it is in use
  std::string fqn;
  bool has_fqn = false;
};
FsdpName parse_fsdp(std::string_view name) {
  FsdpName r;
  constexpr std::string_view kPrefix = "FSDP::";
  if (name.substr(0, kPrefix.size()) != kPrefix) return r;
  const std::string_view rest = strip_fsdp_group_suffix(name.substr(kPrefix.size()));  // "... [pg=2]"
  const auto open = rest.find(" (");
  if (open != std::string_view::npos && rest.back() == ')') {
    r.action = std::string(rest.substr(0, open));
    r.fqn = std::string(rest.substr(open + 2, rest.size() - open - 3));
    r.has_fqn = true;
  } else {
    r.action = std::string(rest);
  }
  return r;
}

// Sums for the meta summary: a hostile file's sizes may overflow; wrap instead of undefined behaviour.
std::int64_t wrap_add(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}

struct Live {
  std::int64_t size = 0;
  int frames = -1;
  std::string category;
};

struct Event {
  TimeNs time = 0;
  std::int64_t address = 0;
  std::int64_t bytes = 0;
  int frames = -1;  // the allocation's frames (a free gets its allocation's)
  std::string category;
};

struct Range {
  TimeNs start = 0, end = 0;
  std::string name;
  std::optional<MemContext> context;
  RowId module = kNoRow;
  RangeKind kind = RangeKind::Annotation;
  RangePhase phase = RangePhase::None;
};

class Builder {
 public:
  Builder(const Snapshot& s, const std::string& label, ImportContext& ctx) : s_(s), label_(label), ctx_(ctx), w_(ctx.writer) {}

  void run() {
    fix_clock();
    std::map<std::int64_t, bool> devices;  // device -> has anything
    for (std::size_t d = 0; d < s_.device_traces.size(); ++d)
      if (!s_.device_traces[d].empty()) devices[static_cast<std::int64_t>(d)] = true;
    for (const Segment& seg : s_.segments) devices[checked_device(seg.device)] = true;
    for (const Annotation& a : s_.annotations) devices[checked_device(a.device)] = true;
    if (devices.empty()) throw ImportError("'" + label_ + "': the memory snapshot is empty (no segments, no trace)");
    for (const auto& [d, _] : devices) write_device(d);
    for (const auto& [key, value] : s_.allocator_settings) w_.set_meta("snapshot.allocator." + key, value);
    if (s_.unknown_actions) ctx_.skip(static_cast<int>(devices.begin()->first), "snapshot trace entry with an action this importer does not use", s_.unknown_actions);
  }

 private:
  const Snapshot& s_;
  const std::string& label_;
  ImportContext& ctx_;
  ProfileWriter& w_;
  bool timed_ = false;
  std::int64_t origin_us_ = 0;
  std::vector<RowId> module_of_frames_;

  std::int64_t checked_device(std::int64_t d) const {
    if (d < 0 || d >= kMaxDevice)
      throw ImportError("'" + label_ + "': device index " + std::to_string(d) + " out of range (0 to " + std::to_string(kMaxDevice - 1) + ")");
    return d;
  }

  // The earliest time_us of the snapshot fixes the origin (unless an earlier input did).
  void fix_clock() {
    std::optional<std::int64_t> lo, hi;
    auto see = [&](const std::optional<std::int64_t>& t) {
      if (!t) return;
      if (*t < 0) throw ImportError("'" + label_ + "': negative time_us (" + std::to_string(*t) + ")");
      lo = lo ? std::min(*lo, *t) : *t;
      hi = hi ? std::max(*hi, *t) : *t;
    };
    for (const auto& tr : s_.device_traces)
      for (const TraceEntry& e : tr) see(e.time_us);
    for (const Annotation& a : s_.annotations) see(a.time_us);
    if (!lo) return;
    if (*hi - *lo > kMaxSpanUs) throw ImportError("'" + label_ + "': time_us values span more than 31 years; damaged snapshot");
    if (*hi > INT64_MAX / 1000) throw ImportError("'" + label_ + "': time_us " + std::to_string(*hi) + " is out of range");
    timed_ = true;
    const TimeNs origin_ns = ctx_.time_origin_unix_ns(*lo * 1000);
    origin_us_ = origin_ns / 1000;
  }

  // µs since the profile's origin (which an earlier input may have fixed far from this file's).
  std::int64_t rel_us(std::int64_t us) const {
    const std::int64_t rel = us - origin_us_;  // both in [0, INT64_MAX / 1000]: no overflow
    if (rel > kMaxSpanUs || rel < -kMaxSpanUs)
      throw ImportError("'" + label_ + "': time_us " + std::to_string(us) + " is more than 31 years from the profile's origin");
    return rel;
  }
  TimeNs at_us(std::int64_t us) const { return rel_us(us) * 1000; }

  // Row of a module path, creating it and its ancestors (shared with the other inputs of the import).
  RowId ensure_path(const std::vector<ModuleLevel>& levels, char sep, bool last_is_fsdp_unit = false) {
    RowId parent = kNoRow;
    std::string fqn;
    for (std::size_t i = 0; i < levels.size(); ++i) {
      if (!fqn.empty()) fqn += sep;  // the root module "" has no separator after it
      fqn += levels[i].name;
      if (fqn.size() > kMaxFqn) return parent;
      if (auto it = ctx_.module_ids.find(fqn); it != ctx_.module_ids.end()) {
        parent = it->second;
        continue;
      }
      ModuleRow m;
      m.parent = parent;
      m.fqn = fqn;
      m.class_name = levels[i].class_name;
      m.is_fsdp_unit = last_is_fsdp_unit && i + 1 == levels.size();
      parent = w_.add_module(m);
      ctx_.module_ids.emplace(fqn, parent);
    }
    return parent;
  }
  // A module named by its FQN (hook and FSDP ranges): under the root module "" as the Kineto
  // importer places them; `fsdp_unit` marks the module fully_shard was applied to.
  RowId module_of_fqn(const std::string& fqn, bool fsdp_unit = false) {
    if (auto it = ctx_.module_ids.find(fqn); it != ctx_.module_ids.end()) return it->second;
    if (fqn.size() > kMaxFqn) return kNoRow;
    std::vector<ModuleLevel> levels{{"", ""}};
    if (!fqn.empty()) {
      std::size_t b = 0;
      while (levels.size() < kMaxModuleLevels) {
        const auto dot = fqn.find('.', b);
        levels.push_back({fqn.substr(b, dot == std::string::npos ? std::string::npos : dot - b), ""});
        if (dot == std::string::npos) break;
        b = dot + 1;
      }
    }
    return ensure_path(levels, '.', fsdp_unit);
  }
  RowId module_of_frames(int frames) {
    if (frames < 0) return kNoRow;
    if (module_of_frames_.empty()) module_of_frames_.assign(s_.frame_lists.size(), kNoRow - 1);
    RowId& m = module_of_frames_[static_cast<std::size_t>(frames)];
    if (m == kNoRow - 1) {
      const ModulePath p = module_path_from_frames(s_.frame_lists[static_cast<std::size_t>(frames)]);
      m = p.levels.empty() ? kNoRow : ensure_path(p.levels, p.separator);
    }
    return m;
  }

  // The device's record_function ranges: START / END paired by name, innermost first closed.
  std::vector<Range> annotation_ranges(std::int64_t device, TimeNs last, int rank) {
    std::vector<Range> out;
    std::vector<std::size_t> open;
    std::int64_t seq = 0;
    for (const Annotation& a : s_.annotations) {
      if (a.device != device) continue;
      const TimeNs t = timed_ && a.time_us ? at_us(*a.time_us) : seq * 1000;
      ++seq;
      if (a.start) {
        if (open.size() >= kMaxAnnotationDepth) {
          ctx_.skip(rank, "record_function range nested deeper than 256 levels");
          continue;
        }
        Range r;
        r.start = t;
        r.end = t;
        r.name = a.name;
        open.push_back(out.size());
        out.push_back(std::move(r));
        continue;
      }
      // END: closes the innermost open range of that name (and any left open inside it).
      auto it = std::find_if(open.rbegin(), open.rend(), [&](std::size_t k) { return out[k].name == a.name; });
      if (it == open.rend()) {
        ctx_.skip(rank, "record_function END without its START");
        continue;
      }
      const std::size_t keep = static_cast<std::size_t>(open.rend() - it) - 1;
      for (std::size_t k = keep; k < open.size(); ++k) out[open[k]].end = std::max(out[open[k]].start, t + 999);
      open.resize(keep);
    }
    for (std::size_t k : open) out[k].end = std::max(out[k].start, last);
    bool hooks = false;
    for (const Range& r : out)
      if (auto hook = collector::parse_module_range_name(r.name); hook && !hook->optimizer) hooks = true;
    // FSDP2's ranges name their unit ("FSDP::pre_forward (layers.3)"); a unit's forward runs from
    // its pre_forward to its post_forward, its backward from pre_backward to post_backward (FSDP2
    // has no range around the module's compute). ShardScope's hook ranges, where present, already
    // give every module's own range: then FSDP's pairs add none (as in the Kineto importer).
    std::map<std::string, std::vector<TimeNs>> open_fwd, open_bwd;
    const std::size_t n_annotations = out.size();
    for (std::size_t k = 0; k < n_annotations; ++k) {
      const FsdpName f = parse_fsdp(out[k].name);
      if (!f.has_fqn) continue;
      out[k].module = module_of_fqn(f.fqn, true);
      if (hooks) continue;
      auto pair_up = [&](std::map<std::string, std::vector<TimeNs>>& o, std::string_view pre, std::string_view post, RangePhase phase) {
        if (f.action == pre) o[f.fqn].push_back(out[k].start);
        if (f.action != post || o[f.fqn].empty()) return;
        Range m;
        m.start = o[f.fqn].back();
        m.end = std::max(m.start, out[k].end);  // a file's times need not be in order
        o[f.fqn].pop_back();
        m.name = f.fqn.empty() ? std::string("(root)") : f.fqn;
        m.kind = RangeKind::Module;
        m.phase = phase;
        m.module = out[k].module;
        m.context = phase == RangePhase::Backward ? MemContext::Backward : MemContext::Forward;
        out.push_back(std::move(m));
      };
      pair_up(open_fwd, "pre_forward", "post_forward", RangePhase::Forward);
      pair_up(open_bwd, "pre_backward", "post_backward", RangePhase::Backward);
    }
    for (std::size_t k = 0; k < n_annotations; ++k) {
      Range& r = out[k];
      r.context = memory_context_of_range(r.name);
      if (auto hook = collector::parse_module_range_name(r.name); hook && !hook->optimizer) {
        r.kind = RangeKind::Module;
        r.phase = hook->phase;
        r.module = module_of_fqn(hook->fqn);
        r.name = collector::module_range_display_name(hook->fqn);
        if (!r.context)
          r.context = hook->phase == RangePhase::Backward    ? MemContext::Backward
                      : hook->phase == RangePhase::Recompute ? MemContext::Recompute
                                                             : MemContext::Forward;
      } else if (hook && hook->optimizer) {
        r.phase = RangePhase::Optimizer;
        r.context = MemContext::Optimizer;
      } else if (r.name.rfind("FSDP::", 0) == 0) {
        r.kind = RangeKind::Fsdp;
        const bool bwd = r.name.find("backward") != std::string::npos;
        r.phase = bwd ? RangePhase::Backward : RangePhase::Forward;
      }
    }
    return out;
  }

  void write_ranges(const std::vector<Range>& ranges, int rank) {
    if (ranges.empty()) return;
    ThreadInfo th;
    th.rank = rank;
    th.tid = 0;
    th.name = "record_function (memory snapshot)";
    const RowId thread = w_.add_thread(th);
    std::vector<std::pair<TimeNs, TimeNs>> iv;
    for (const Range& r : ranges) iv.emplace_back(r.start, r.end);
    add_nested_ranges(w_, iv, [&](std::size_t k) {
      const Range& c = ranges[k];
      RangeRow r;
      r.rank = rank;
      r.thread = thread;
      r.start = c.start;
      r.end = c.end;
      r.name = w_.intern(c.name);
      r.kind = c.kind;
      r.phase = c.phase;
      r.module = c.module;
      return r;
    });
  }

  // The allocator's layout when the trace begins: the segments at snapshot time that the trace
  // did not allocate, and the blocks already live (freed in the trace without an allocation, or
  // still allocated at snapshot time without one).
  AllocatorBlocks allocator_before_trace(std::int64_t device, const std::vector<TraceEntry>& trace) const {
    AllocatorBlocks blocks(block_sizes_for(s_.allocator_settings));
    std::set<std::int64_t> segments_in_trace, allocated;
    for (const TraceEntry& e : trace) {
      if (e.action == Action::SegmentAlloc) segments_in_trace.insert(e.addr);
      if (e.action == Action::Alloc) allocated.insert(e.addr);
      if (e.action == Action::FreeCompleted && !allocated.erase(e.addr)) blocks.live_before(e.addr);
    }
    for (const Segment& seg : s_.segments) {
      if (seg.device != device) continue;
      if (!segments_in_trace.count(seg.address)) blocks.segment_alloc(seg.address, seg.total_size);
      for (const Block& b : seg.blocks)
        if ((b.state == "active_allocated" || b.state == "active_pending_free") && !allocated.count(b.address))
          blocks.live_before(b.address);
    }
    return blocks;
  }

  void write_device(std::int64_t device) {
    const int rank = static_cast<int>(device);
    ctx_.claim_rank(rank, label_);
    RankInfo ri;
    ri.rank = rank;
    ri.device_index = rank;
    w_.add_rank(ri);

    static const std::vector<TraceEntry> kNone;
    const std::vector<TraceEntry>& trace = static_cast<std::size_t>(device) < s_.device_traces.size()
                                               ? s_.device_traces[static_cast<std::size_t>(device)]
                                               : kNone;
    // Times: µs from the origin, entries within one µs 1 ns apart in trace order, from 1 ns into
    // the µs: what was allocated before the trace began is placed at ns 0 of the first µs, so it
    // is live before the trace's first event (even a free of it in that same µs).
    std::vector<TimeNs> times(trace.size());
    {
      std::int64_t last_us = 0, in_us = 0;
      bool first = true;
      for (std::size_t i = 0; i < trace.size(); ++i) {
        std::int64_t us = timed_ ? (trace[i].time_us ? rel_us(*trace[i].time_us) : last_us) : static_cast<std::int64_t>(i);
        in_us = (!first && us == last_us) ? std::min<std::int64_t>(in_us + 1, 999) : 1;
        first = false;
        last_us = us;
        times[i] = us * 1000 + in_us;
      }
    }
    TimeNs t0 = times.empty() ? 0 : *std::min_element(times.begin(), times.end());
    t0 -= ((t0 % 1000) + 1000) % 1000;  // the start of its µs (floor, also before an earlier input's origin)
    const TimeNs t_last = times.empty() ? 0 : *std::max_element(times.begin(), times.end());

    std::vector<Event> before, during;  // allocations made before the trace began; the trace's events
    std::unordered_map<std::int64_t, Live> live;
    AllocatorBlocks blocks = allocator_before_trace(device, trace);
    std::int64_t reserved = 0, reserved_peak = 0, ooms = 0, reallocs = 0;
    for (std::size_t i = 0; i < trace.size(); ++i) {
      const TraceEntry& e = trace[i];
      switch (e.action) {
        case Action::Alloc: {
          if (auto it = live.find(e.addr); it != live.end()) {
            during.push_back({times[i], e.addr, -it->second.size, it->second.frames, it->second.category});
            blocks.free(e.addr);
            ++reallocs;
          }
          const std::int64_t size = blocks.alloc(e.addr, e.size);
          live[e.addr] = {size, e.frames, e.category};
          during.push_back({times[i], e.addr, size, e.frames, e.category});
          break;
        }
        case Action::FreeCompleted: {
          blocks.free(e.addr);
          auto it = live.find(e.addr);
          if (it == live.end()) {
            before.push_back({t0, e.addr, e.size, e.frames, e.category});
            during.push_back({times[i], e.addr, -e.size, e.frames, e.category});
          } else {
            during.push_back({times[i], e.addr, -it->second.size, it->second.frames, it->second.category});
            live.erase(it);
          }
          break;
        }
        case Action::SegmentAlloc:
        case Action::SegmentMap:
          if (e.action == Action::SegmentAlloc) blocks.segment_alloc(e.addr, e.size);
          else blocks.segment_map();
          reserved = wrap_add(reserved, e.size);
          reserved_peak = std::max(reserved_peak, reserved);
          break;
        case Action::SegmentFree:
          blocks.segment_free(e.addr);
          reserved = wrap_add(reserved, -e.size);
          break;
        case Action::SegmentUnmap: reserved = wrap_add(reserved, -e.size); break;
        case Action::Oom: ++ooms; break;
        default: break;
      }
    }
    if (reallocs) ctx_.skip(rank, "snapshot alloc at an address still allocated (its free is not in the trace; freed there)", reallocs);
    // Blocks allocated at snapshot time that the trace never allocated: older than the trace.
    // The blocks live at snapshot time that the trace allocated check the block sizes given them.
    std::int64_t seg_count = 0, reserved_at_snapshot = 0, allocated_at_snapshot = 0, checked = 0, differing = 0;
    for (const Segment& seg : s_.segments) {
      if (seg.device != device) continue;
      ++seg_count;
      reserved_at_snapshot = wrap_add(reserved_at_snapshot, seg.total_size);
      for (const Block& b : seg.blocks) {
        if (b.state != "active_allocated" && b.state != "active_pending_free") continue;
        allocated_at_snapshot = wrap_add(allocated_at_snapshot, b.size);
        if (auto it = live.find(b.address); it != live.end()) {
          ++checked;
          if (it->second.size != b.size) ++differing;
          continue;
        }
        before.push_back({t0, b.address, b.size, b.frames, {}});
      }
    }
    if (!before.empty())
      ctx_.skip(rank, "snapshot block allocated before the trace began (added at the trace's start)", static_cast<std::int64_t>(before.size()));

    std::vector<Range> ranges = annotation_ranges(device, std::max(t_last, t0), rank);
    write_ranges(ranges, rank);
    write_events(rank, before, during, ranges);

    if (seg_count || !trace.empty()) {
      const std::string key = "snapshot.device" + std::to_string(device);
      w_.set_meta(key + ".segments", std::to_string(seg_count));
      w_.set_meta(key + ".reserved_bytes", std::to_string(reserved_at_snapshot));
      w_.set_meta(key + ".allocated_bytes", std::to_string(allocated_at_snapshot));
      w_.set_meta(key + ".trace_entries", std::to_string(trace.size()));
      w_.set_meta(key + ".segment_growth_peak_bytes", std::to_string(reserved_peak));
      w_.set_meta(key + ".ooms", std::to_string(ooms));
      w_.set_meta(key + ".block_sizes", block_sizes_name(blocks.rule()));
      w_.set_meta(key + ".block_sizes_checked", std::to_string(checked));
      w_.set_meta(key + ".block_sizes_differing", std::to_string(differing));
    }
  }

  // Module and context at each event's time: the innermost enclosing annotation range that names
  // one (ranges are properly nested: a stack sweep), else the allocation's frames.
  void write_events(int rank, const std::vector<Event>& before, const std::vector<Event>& during, const std::vector<Range>& ranges) {
    std::vector<const Event*> evs;
    evs.reserve(before.size() + during.size());
    for (const Event& e : before) evs.push_back(&e);
    for (const Event& e : during) evs.push_back(&e);
    std::stable_sort(evs.begin(), evs.end(), [](const Event* a, const Event* b) { return a->time < b->time; });
    std::vector<std::size_t> by_start(ranges.size());
    for (std::size_t k = 0; k < ranges.size(); ++k) by_start[k] = k;
    std::stable_sort(by_start.begin(), by_start.end(), [&](std::size_t a, std::size_t b) {
      return ranges[a].start != ranges[b].start ? ranges[a].start < ranges[b].start : ranges[a].end > ranges[b].end;
    });
    std::vector<std::size_t> stack;
    std::size_t next = 0;
    std::vector<MemoryEventRow> rows;
    std::vector<MemoryEventIn> ins;
    std::unordered_map<std::int64_t, std::pair<RowId, MemContext>> alloc_owner;  // address -> its allocation's module / context
    bool any_context = false;
    for (const Event* e : evs) {
      while (next < by_start.size() && ranges[by_start[next]].start <= e->time) {
        while (!stack.empty() && ranges[stack.back()].end < ranges[by_start[next]].start) stack.pop_back();
        stack.push_back(by_start[next++]);
      }
      while (!stack.empty() && ranges[stack.back()].end < e->time) stack.pop_back();
      MemoryEventRow r;
      r.rank = rank;
      r.time = e->time;
      r.address = e->address;
      r.bytes = e->bytes;
      MemContext c = MemContext::None;
      if (e->bytes > 0) {
        for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
          const Range& g = ranges[*it];
          if (g.end < e->time) continue;  // ended under a range that did not nest properly
          if (r.module == kNoRow && g.module != kNoRow) r.module = g.module;
          if (c == MemContext::None && g.context) c = *g.context;
        }
        if (r.module == kNoRow) r.module = module_of_frames(e->frames);
        alloc_owner[e->address] = {r.module, c};
      } else if (auto it = alloc_owner.find(e->address); it != alloc_owner.end()) {
        r.module = it->second.first;  // a free belongs to its allocation's module
        alloc_owner.erase(it);
      }
      if (c != MemContext::None) any_context = true;
      r.category = category_of(e->category);
      rows.push_back(r);
      ins.push_back({r.time, r.address, r.bytes, c});
    }
    // FSDP / optimizer contexts from record_function ranges categorise what the memory profiler did not.
    if (any_context) {
      const std::vector<MemoryCategory> cats = classify_memory(ins, {}, {});
      for (std::size_t k = 0; k < rows.size(); ++k)
        if (rows[k].category == MemoryCategory::Unknown) rows[k].category = cats[k];
    }
    for (const MemoryEventRow& r : rows) w_.add_memory_event(r);
  }
};

}  // namespace

void import_snapshot_bytes(std::string_view bytes, const std::string& label, ImportContext& ctx) {
  Snapshot s;
  try {
    const pickle::Document doc = pickle::parse(bytes, label);
    s = read_snapshot(doc, label);
  } catch (const pickle::PickleError& e) {
    throw ImportError(std::string(e.what()) + " (PyTorch memory snapshot)");
  }
  Builder(s, label, ctx).run();
}

}  // namespace snapshot

void import_torch_snapshot(const std::string& path, ImportContext& ctx) {
  const std::string bytes = read_input_file(path);
  snapshot::import_snapshot_bytes(bytes, path, ctx);
}

}  // namespace ss::import
