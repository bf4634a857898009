#include "profiler/import/kineto/kineto_build.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "profiler/common/fsdp_range_name.h"
#include "profiler/common/memory_categories.h"
#include "profiler/common/module_range_name.h"
#include "profiler/common/nccl_names.h"
#include "profiler/import/common/innermost_range.h"
#include "profiler/import/common/lost_frees.h"
#include "profiler/import/common/stream_kind.h"
#include "profiler/import/common/unrecorded_frees.h"
#include "storage/cpu_device.h"
#include "storage/interval_union.h"
#include "storage/add_nested_ranges.h"
#include "storage/range_nesting.h"
#include "storage/sorted_runs.h"
#include "storage/value_bounds.h"

namespace ss::import::kineto {
namespace {

__extension__ typedef __int128 Wide;  // time arithmetic that cannot overflow on hostile input

constexpr std::size_t kMaxFqn = 4096;                  // longer module names are not real models
constexpr std::size_t kMaxModuleDepth = 256;           // nn.Module nesting deeper than this is refused

constexpr std::string_view kModulePrefix = "nn.Module: ";
constexpr std::string_view kFsdpPrefix = "FSDP::";

// Most names do not start with the prefix's first letter: that test settles them without a memcmp
// call (each of a CPU trace's 250,000 operator names is tested against about ten prefixes).
bool starts_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && (p.empty() || (s[0] == p[0] && s.compare(0, p.size(), p) == 0));
}

// "TransformerBlock_12" -> "TransformerBlock" (Kineto appends a per-class instance number).
std::string class_of_label(std::string_view label) {
  std::size_t end = label.size();
  while (end > 0 && label[end - 1] >= '0' && label[end - 1] <= '9') --end;
  if (end > 0 && end < label.size() && label[end - 1] == '_') return std::string(label.substr(0, end - 1));
  return std::string(label);
}

// "FSDP::pre_forward (layers.3)" -> action "pre_forward", fqn "layers.3" (has_fqn false without "(...)").
// A grouped unit (fully_shard([norm, output])) names its members: "FSDP::pre_forward (norm, output)"
// is the unit of its first member, "norm" (the member `record` stores as the unit), not a module.
// A unit's parameter group on its own mesh: "FSDP::all_gather (layers.0) [pg=2]" (fsdp_range_name.h).
struct FsdpName {
  std::string_view action;
  std::string fqn;
  bool has_fqn = false;
};
FsdpName parse_fsdp(std::string_view name) {
  FsdpName r;
  std::string_view rest = strip_fsdp_group_suffix(name.substr(kFsdpPrefix.size()));
  const auto open = rest.find(" (");
  if (open != std::string_view::npos && !rest.empty() && rest.back() == ')') {
    r.action = rest.substr(0, open);
    const std::string_view fqns = rest.substr(open + 2, rest.size() - open - 3);
    r.fqn = std::string(fqns.substr(0, fqns.find(", ")));
    r.has_fqn = true;
  } else {
    r.action = rest;
  }
  return r;
}

std::string normalize_ranks(std::string_view s) {
  std::string r;
  for (char c : s)
    if (c != ' ') r += c;
  return r;
}

struct CpuRange {
  std::int64_t tid = 0;
  TimeNs start = 0, end = 0;
  std::uint32_t name = 0;
  RangeKind kind = RangeKind::Annotation;
  RangePhase phase = RangePhase::None;
  RowId module = kNoRow;
  bool module_scope = false;  // counts for attribution (module, FSDP-with-fqn, synthesized)
  std::optional<MemContext> mem_context;  // what allocations made inside it are (memory_categories.h)
};

struct PendingCollective {
  RowId kernel = kNoRow;
  TimeNs start = 0, end = 0;
  CollectiveType type = CollectiveType::Unknown;
  std::int64_t bytes = 0;
  std::uint32_t dtype = 0;
  RowId group = kNoRow;
  int group_size = 0;
};

class Builder {
 public:
  Builder(const KinetoTrace& t, const std::string& path, ImportContext& ctx) : t_(t), path_(path), ctx_(ctx), w_(ctx.writer) {}

  void run() {
    rank_ = t_.rank ? *t_.rank : ctx_.next_free_rank();
    ctx_.claim_rank(rank_, path_);
    set_clock();
    index_events();
    merge_backward_spans();
    write_rank();
    build_modules();
    build_steps();
    build_indexes();
    if (cpu_device())
      write_cpu_device();
    else
      write_kernels();
    write_cpu_ranges();
    write_gpu_ranges();
    write_memory();
    for (const auto& [reason, n] : t_.skipped) ctx_.skip(rank_, reason, n);
  }

 private:
  [[noreturn]] void fail(const RawEvent& e, const std::string& what) const {
    throw ImportError("'" + path_ + "': " + what + " (event at byte " + std::to_string(e.offset) + ")");
  }

  // Profile time of a trace timestamp; rejects values beyond the profile's time bounds
  // (storage/value_bounds.h), which every reader would refuse.
  TimeNs rel(const RawEvent& e, TimeNs ts, TimeNs plus = 0) const {
    const Wide v = static_cast<Wide>(ts) + plus + shift_;
    if (v > static_cast<Wide>(kMaxAbsTimeNs) || v < -static_cast<Wide>(kMaxAbsTimeNs))
      fail(e, "timestamp out of range");
    return static_cast<TimeNs>(v);
  }
  TimeNs start_of(const RawEvent& e) const { return rel(e, e.ts); }
  TimeNs end_of(const RawEvent& e) const { return rel(e, e.ts, e.dur == kAbsent ? 0 : e.dur); }

  void set_clock() {
    // All ranks land on one clock: absolute epoch ns = baseTimeNanoseconds + ts (traces without
    // a base carry unix-epoch microseconds in ts); the first file's earliest event is time 0.
    bool any = false;
    TimeNs min_ts = 0;
    for (const auto& e : t_.events) {
      if (e.ts == kAbsent) continue;
      if (!any || e.ts < min_ts) min_ts = e.ts;
      any = true;
    }
    const Wide first = static_cast<Wide>(t_.base_ns) + (any ? min_ts : 0);
    if (first > INT64_MAX || first < INT64_MIN) throw ImportError("'" + path_ + "': timestamps out of range");
    const TimeNs origin = ctx_.time_origin_unix_ns(static_cast<TimeNs>(first));
    shift_ = static_cast<Wide>(t_.base_ns) - origin;
  }

  void index_events() {
    for (std::size_t i = 0; i < t_.events.size(); ++i) {
      const RawEvent& e = t_.events[i];
      switch (e.cat) {
        case Cat::Kernel:
        case Cat::Memcpy:
        case Cat::Memset: gpu_ops_.push_back(i); break;
        case Cat::GpuUserAnnotation: gpu_ann_.push_back(i); break;
        case Cat::Runtime: launches_[e.correlation] = i; break;
        case Cat::CpuInstant: memory_.push_back(i); break;
        case Cat::CpuOp:
          // The autograd engine's device thread runs backward; "Fwd thread id" is on forward ops
          // too, so only the engine's own ops identify the thread.
          if (starts_with(e.name, "autograd::engine::evaluate_function")) {
            autograd_tids_[e.tid] = true;
            if (e.ts != kAbsent && e.dur != kAbsent) backward_spans_[e.tid].emplace_back(e.ts, e.ts + e.dur);
          }
          if (e.comm >= 0 && e.name == "record_param_comms" && e.external_id != kAbsent)
            comm_ops_[e.external_id] = e.comm;
          cpu_.push_back(i);
          break;
        case Cat::UserAnnotation:
          if (starts_with(e.name, "ss:pg:")) {  // the CPU recorder's process group of a send / recv: not a range
            if (e.ts != kAbsent && e.dur != kAbsent) pg_ranges_[e.tid].push_back({e.ts, e.ts + e.dur, e.name.substr(6)});
            break;
          }
          if (starts_with(e.name, "ss:cb:")) {  // the CPU recorder's size of the c10d call inside: not a range
            if (e.ts != kAbsent && e.dur != kAbsent) add_size_range(e);
            break;
          }
          if (starts_with(e.name, "ss:mem:")) {  // the hooks' tensor facts: not ranges
            if (e.ts != kAbsent)
              if (auto f = parse_tensor_fact(e.name, rel(e, e.ts))) facts_.push_back(*f);
            break;
          }
          if (starts_with(e.name, "ss:live:")) {  // tensors alive when a capture window began: not ranges
            if (e.ts != kAbsent)
              if (auto l = parse_live_tensor(e.name, rel(e, e.ts))) live_.push_back(std::move(*l));
            break;
          }
          if (starts_with(e.name, "ss:freed:")) {  // a live tensor's death
            if (e.ts != kAbsent)
              if (auto a = parse_freed_tensor(e.name)) freed_.emplace_back(*a, rel(e, e.ts));
            break;
          }
          // gloo runs collectives on its worker threads, but send and recv inline on the calling
          // (training) thread: those do not make a thread a worker.
          if (starts_with(e.name, "gloo:") && !gloo_inline(e.name)) gloo_tids_.insert(e.tid);
          cpu_.push_back(i);
          break;
        case Cat::PythonFunction: cpu_.push_back(i); break;
        default: break;
      }
    }
  }

  // No GPU activity at all: the trace is of a CPU run (torch.profiler with CPU activities, gloo),
  // and the CPU is the device. Its training thread's operators become the compute lane.
  bool cpu_device() const { return gpu_ops_.empty() && !cpu_.empty(); }

  void write_rank() {
    RankInfo r;
    r.rank = rank_;
    r.world_size = t_.world_size;
    std::map<std::int64_t, std::int64_t> device_use, pid_use;
    for (std::size_t i : gpu_ops_) ++device_use[t_.events[i].device];
    for (std::size_t i : cpu_) ++pid_use[t_.events[i].pid];
    auto most = [](const std::map<std::int64_t, std::int64_t>& m) {
      std::int64_t best = kAbsent, n = 0;
      for (const auto& [k, c] : m)
        if (c > n && k != kAbsent) best = k, n = c;
      return best;
    };
    const std::int64_t dev = most(device_use);
    const std::int64_t pid = most(pid_use);
    if (pid != kAbsent) r.pid = pid;
    if (cpu_device()) r.gpu_name = std::string(kCpuDeviceName);  // no GPU in the trace: the CPU is the device
    if (dev != kAbsent && dev >= 0 && dev < (1 << 20)) {
      r.device_index = static_cast<int>(dev);
      for (const auto& d : t_.devices) {
        if (d.id != dev) continue;
        r.gpu_name = d.name;
        r.gpu_memory_bytes = d.total_global_mem;
        r.sm_count = static_cast<int>(d.num_sms);
        r.compute_major = static_cast<int>(d.compute_major);
        r.compute_minor = static_cast<int>(d.compute_minor);
      }
    }
    w_.add_rank(r);
  }

  // The module row of `fqn`, creating it and any missing ancestors (by FQN prefix; FSDP trees
  // also hang under the root ""). Iterative: hostile names with many dots must not recurse deeply.
  RowId ensure_module(const std::string& fqn, const std::string& class_name, bool fsdp_unit, bool root_parent,
                      const RawEvent& from) {
    if (auto it = ctx_.module_ids.find(fqn); it != ctx_.module_ids.end()) return it->second;
    if (fqn.size() > kMaxFqn) fail(from, "module name longer than " + std::to_string(kMaxFqn) + " characters");
    std::vector<std::string> missing{fqn};  // innermost first
    RowId parent = kNoRow;
    for (;;) {
      const std::string& cur = missing.back();
      const auto dot = cur.rfind('.');
      std::string up;
      if (dot != std::string::npos)
        up = cur.substr(0, dot);
      else if (!(root_parent && !cur.empty()))
        break;
      if (auto it = ctx_.module_ids.find(up); it != ctx_.module_ids.end()) {
        parent = it->second;
        break;
      }
      missing.push_back(std::move(up));
    }
    RowId id = kNoRow;
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
      ModuleRow m;
      m.fqn = *it;
      m.parent = parent;
      if (*it == fqn) {
        m.class_name = class_name;
        m.is_fsdp_unit = fsdp_unit;
      }
      id = w_.add_module(m);
      ctx_.module_ids.emplace(*it, id);
      parent = id;
    }
    return id;
  }

  bool on_autograd_thread(std::int64_t tid) const { return autograd_tids_.count(tid) != 0; }

  // True when raw time `ts` on thread `tid` lies inside an autograd engine function: the thread
  // is running backward then. Older PyTorch runs backward on the main thread too, so the thread
  // alone does not tell forward from backward.
  bool in_backward(std::int64_t tid, TimeNs ts) const {
    auto it = backward_merged_.find(tid);
    if (it == backward_merged_.end() || ts == kAbsent) return false;
    return interval_holding(it->second, ts) >= 0;
  }

  void merge_backward_spans() {
    for (auto& [tid, spans] : backward_spans_) backward_merged_[tid] = interval_union(std::move(spans));
  }

  void build_modules() {
    std::map<std::int64_t, std::vector<std::size_t>> module_events;  // tid -> nn.Module events
    std::map<std::int64_t, std::vector<std::size_t>> fsdp_events;
    for (std::size_t i : cpu_) {
      const RawEvent& e = t_.events[i];
      if (starts_with(e.name, kModulePrefix))
        module_events[e.tid].push_back(i);
      else if (starts_with(e.name, kFsdpPrefix))
        fsdp_events[e.tid].push_back(i);
      else if (auto hook = collector::parse_module_range_name(e.name); hook && e.cat == Cat::UserAnnotation)
        add_hook_range(e, *hook);
      else
        add_plain_cpu_range(e);
    }
    // nn.Module ranges: the fully-qualified name is the chain of enclosing module labels.
    for (auto& [tid, idx] : module_events) {
      std::vector<std::pair<TimeNs, TimeNs>> iv;
      for (std::size_t i : idx) iv.emplace_back(start_of(t_.events[i]), end_of(t_.events[i]));
      const NestingResult nr = nest_ranges(iv);
      std::vector<std::string> fqn(idx.size());
      for (std::size_t k : nr.order) {
        const RawEvent& e = t_.events[idx[k]];
        const std::string_view label = e.name.substr(kModulePrefix.size());
        const int parent = nr.nesting[k].parent;
        if (static_cast<std::size_t>(nr.nesting[k].depth) >= kMaxModuleDepth)
          fail(e, "nn.Module ranges nested deeper than " + std::to_string(kMaxModuleDepth) + " levels");
        fqn[k] = parent >= 0 ? fqn[static_cast<std::size_t>(parent)] + "." + std::string(label) : std::string(label);
        CpuRange r;
        r.tid = tid;
        r.start = iv[k].first;
        r.end = iv[k].second;
        r.name = w_.intern(e.name);
        r.kind = RangeKind::Module;
        // Module forward calls seen on the autograd thread are activation-checkpoint recomputes.
        r.phase = in_backward(tid, e.ts) ? RangePhase::Recompute : RangePhase::Forward;
        if (r.phase == RangePhase::Recompute) r.mem_context = MemContext::Recompute;
        r.module = ensure_module(fqn[k], class_of_label(label), false, false, e);
        r.module_scope = true;
        ranges_.push_back(r);
      }
    }
    // FSDP ranges name their unit; pre_/post_forward and pre_/post_backward pairs also give the
    // unit's forward and backward span (FSDP2 has no range around the module's compute).
    for (auto& [fsdp_tid, idx] : fsdp_events) {
      const std::int64_t tid = fsdp_tid;  // a plain variable: lambdas below capture it
      std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return t_.events[a].ts < t_.events[b].ts; });
      std::map<std::string, std::vector<TimeNs>> open_fwd, open_bwd;
      for (std::size_t i : idx) {
        const RawEvent& e = t_.events[i];
        const FsdpName f = parse_fsdp(e.name);
        CpuRange r;
        r.tid = tid;
        r.start = start_of(e);
        r.end = end_of(e);
        r.name = w_.intern(e.name);
        r.kind = RangeKind::Fsdp;
        r.mem_context = memory_context_of_range(e.name);
        const bool bwd_name = f.action.find("backward") != std::string_view::npos;
        const bool fwd_name = f.action.find("forward") != std::string_view::npos;
        const bool backward_now = in_backward(tid, e.ts);
        if (bwd_name || (!fwd_name && backward_now))
          r.phase = RangePhase::Backward;
        else
          r.phase = backward_now ? RangePhase::Recompute : RangePhase::Forward;
        if (f.has_fqn) {
          r.module = ensure_module(f.fqn, "", true, true, e);
          r.module_scope = true;
          auto pair_up = [&](std::map<std::string, std::vector<TimeNs>>& open, std::string_view pre, std::string_view post,
                             RangePhase phase) {
            if (f.action == pre) open[f.fqn].push_back(r.start);
            if (f.action == post) {
              auto& st = open[f.fqn];
              if (st.empty()) return;
              CpuRange m;
              m.tid = tid;
              m.start = st.back();
              m.end = r.end;
              st.pop_back();
              m.name = w_.intern(f.fqn.empty() ? std::string("(root)") : f.fqn);
              m.kind = RangeKind::Module;
              m.phase = phase == RangePhase::Forward && backward_now ? RangePhase::Recompute : phase;
              m.module = r.module;
              m.module_scope = true;
              ranges_.push_back(m);
            }
          };
          // ShardScope's hooks already give every module's own range: no second one from FSDP's.
          if (!first_module_start_) {
            pair_up(open_fwd, "pre_forward", "post_forward", RangePhase::Forward);
            pair_up(open_bwd, "pre_backward", "post_backward", RangePhase::Backward);
          }
        }
        ranges_.push_back(r);
      }
    }
  }

  // A range of ShardScope's own Python hooks (shardscope.annotate / `record` on CPU, through
  // torch.profiler.record_function): "ss:fwd:layers.3" is a module range with its phase,
  // "ss:opt:<n>" the optimizer step that closes iteration n.
  void add_hook_range(const RawEvent& e, const collector::ModuleRangeName& hook) {
    CpuRange r;
    r.tid = e.tid;
    r.start = start_of(e);
    r.end = end_of(e);
    r.phase = hook.phase;
    if (hook.optimizer) {
      r.name = w_.intern("optimizer.step");
      r.kind = RangeKind::Annotation;
      r.mem_context = MemContext::Optimizer;
      hook_steps_.push_back({hook.step, r.start, r.end});
    } else {
      r.name = w_.intern(collector::module_range_display_name(hook.fqn));
      r.kind = RangeKind::Module;
      r.module = ensure_module(hook.fqn, "", false, true, e);
      r.module_scope = true;
      r.mem_context = hook.phase == RangePhase::Backward    ? MemContext::Backward
                      : hook.phase == RangePhase::Recompute ? MemContext::Recompute
                                                            : MemContext::Forward;
      if (!first_module_start_ || r.start < *first_module_start_) first_module_start_ = r.start;
      if (hook.phase == RangePhase::Backward) backward_starts_.push_back(r.start);
    }
    ranges_.push_back(r);
  }

  void add_plain_cpu_range(const RawEvent& e) {
    CpuRange r;
    r.tid = e.tid;
    r.start = start_of(e);
    r.end = end_of(e);
    r.name = w_.intern(e.name);
    r.mem_context = memory_context_of_range(e.name);
    if (e.cat == Cat::CpuOp)
      r.kind = RangeKind::CpuOp;
    else if (starts_with(e.name, "nccl:"))
      r.kind = RangeKind::Nccl;
    else
      r.kind = RangeKind::Annotation;
    if (starts_with(e.name, "Optimizer."))
      r.phase = RangePhase::Optimizer;
    else if (in_backward(e.tid, e.ts))
      r.phase = RangePhase::Backward;
    if (starts_with(e.name, "ProfilerStep#")) add_step(e, r);
    if (starts_with(e.name, "autograd::engine::evaluate_function")) backward_starts_.push_back(r.start);
    if (starts_with(e.name, "Optimizer.step")) optimizer_starts_.push_back(r.start);
    if (e.cat == Cat::UserAnnotation && starts_with(e.name, "nccl:")) nccl_annotations_.push_back(&e);
    ranges_.push_back(r);
  }

  void add_step(const RawEvent& e, const CpuRange& r) {
    std::int64_t n = 0;
    const std::string_view num = e.name.substr(13);
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), n);
    if (ec != std::errc() || p != num.data() + num.size()) return;
    if (!steps_seen_.emplace(n).second) return;  // cpu_op and user_annotation copies of one step
    steps_.push_back({rank_, n, r.start, r.end});
  }

  // Steps: the profiler's ProfilerStep#<n> ranges, else the hooks' optimizer ranges (iteration n
  // runs from the end of optimizer step n-1, or the first module range, to the end of step n; the
  // collector's rule). A loop with several optimizers has a range "ss:opt:<n>" for each of them:
  // the step ends with the last (hooks.py, _step_cycle.py). Each step's forward / backward /
  // optimizer boundaries, and its later passes under gradient accumulation, feed the memory
  // categories.
  void build_steps() {
    if (steps_.empty() && !hook_steps_.empty()) {
      std::sort(hook_steps_.begin(), hook_steps_.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
      // Without the hooks' module ranges (`record --no-modules`), FSDP's own unit ranges start it.
      std::optional<TimeNs> first_module = first_module_start_;
      if (!first_module)
        for (const auto& r : ranges_)
          if (r.kind == RangeKind::Module && (!first_module || r.start < *first_module)) first_module = r.start;
      std::optional<TimeNs> prev_end;
      std::set<std::int64_t> seen;
      for (const auto& h : hook_steps_) {
        if (!seen.insert(h.number).second) {  // another optimizer of the same step: the step ends with it
          if (!steps_.empty() && steps_.back().number == h.number && h.end > steps_.back().end)
            steps_.back().end = h.end, prev_end = h.end;
          continue;
        }
        const TimeNs start = prev_end ? *prev_end : first_module ? std::min(*first_module, h.start) : h.start;
        steps_.push_back({rank_, h.number, start, h.end});
        prev_end = h.end;
      }
    }
    std::sort(steps_.begin(), steps_.end(), [](const StepRow& a, const StepRow& b) { return a.start < b.start; });
    for (const auto& h : hook_steps_) optimizer_starts_.push_back(h.start);
    std::sort(backward_starts_.begin(), backward_starts_.end());
    std::sort(optimizer_starts_.begin(), optimizer_starts_.end());
    auto first_in = [](const std::vector<TimeNs>& v, TimeNs a, TimeNs b) {
      auto it = std::lower_bound(v.begin(), v.end(), a);
      return it != v.end() && *it < b ? *it : b;
    };
    for (const auto& st : steps_) {
      w_.add_step(st);
      StepPhases p;
      p.start = st.start;
      p.end = st.end;
      p.optimizer = first_in(optimizer_starts_, st.start, st.end);
      p.backward = std::min(p.optimizer, first_in(backward_starts_, st.start, st.end));
      step_phases_.push_back(p);
    }
    std::vector<TimeNs> forward_modules;
    for (const auto& r : ranges_)
      if (r.kind == RangeKind::Module && r.phase == RangePhase::Forward) forward_modules.push_back(r.start);
    std::sort(forward_modules.begin(), forward_modules.end());
    find_later_passes(step_phases_, forward_modules, backward_starts_);
  }

  void build_indexes() {
    std::map<std::int64_t, std::pair<std::vector<std::pair<TimeNs, TimeNs>>, std::vector<std::int64_t>>> mod, nccl;
    for (const auto& r : ranges_) {
      if (!r.module_scope) continue;
      auto& [iv, vals] = mod[r.tid];
      iv.emplace_back(r.start, r.end);
      vals.push_back(r.module);
    }
    for (const RawEvent* e : nccl_annotations_) {
      auto& [iv, vals] = nccl[e->tid];
      iv.emplace_back(start_of(*e), end_of(*e));
      vals.push_back(static_cast<std::int64_t>(e - t_.events.data()));
    }
    for (auto& [tid, p] : mod) module_index_.emplace(tid, LaneIndex{InnermostRangeIndex(p.first, p.second)});
    std::map<std::int64_t, std::pair<std::vector<std::pair<TimeNs, TimeNs>>, std::vector<std::int64_t>>> mem;
    for (const auto& r : ranges_) {
      if (!r.mem_context) continue;
      auto& [iv, vals] = mem[r.tid];
      iv.emplace_back(r.start, r.end);
      vals.push_back(static_cast<std::int64_t>(*r.mem_context));
    }
    for (auto& [tid, p] : mem) mem_context_index_.emplace(tid, LaneIndex{InnermostRangeIndex(p.first, p.second)});
    for (auto& [tid, p] : nccl) nccl_index_.emplace(tid, LaneIndex{InnermostRangeIndex(p.first, p.second)});
  }

  RowId module_at(std::int64_t tid, TimeNs t) {
    auto it = module_index_.find(tid);
    return it == module_index_.end() ? kNoRow : it->second.at(t, kNoRow);
  }

  const RawEvent* launch_of(const RawEvent& k) const {
    if (k.correlation == kAbsent) return nullptr;
    auto it = launches_.find(k.correlation);
    return it == launches_.end() ? nullptr : &t_.events[it->second];
  }

  RowId stream_id(std::int64_t device, std::int64_t stream, StreamKind kind) {
    auto key = std::make_pair(device, stream);
    if (auto it = streams_.find(key); it != streams_.end()) return it->second;
    StreamInfo s;
    s.rank = rank_;
    s.device = static_cast<int>(std::clamp<std::int64_t>(device, -1, 1 << 20));
    s.native_id = stream;
    s.kind = kind;
    s.name = "stream " + std::to_string(stream);
    const RowId id = w_.add_stream(s);
    streams_.emplace(key, id);
    return id;
  }

  RowId process_group(const CommArgs& c) {
    if (c.pg_name.empty()) return kNoRow;
    const std::string name(c.pg_name);
    std::string ranks = normalize_ranks(c.pg_ranks);
    if (pg_configs_.empty())
      for (const auto& g : t_.process_groups) pg_configs_.emplace(g.name, &g);
    const ProcessGroupConfig* cfg = nullptr;
    for (auto [it, end] = pg_configs_.equal_range(name); it != end; ++it)
      if (ranks.empty() || it->second->ranks == ranks) cfg = it->second;
    if (ranks.empty() && cfg) ranks = cfg->ranks;
    const std::string key = name + "|" + ranks;
    if (auto it = ctx_.process_group_ids.find(key); it != ctx_.process_group_ids.end()) return it->second;
    ProcessGroupRow g;
    g.name = name;
    g.ranks = ranks;
    g.description = !c.pg_desc.empty() ? std::string(c.pg_desc) : (cfg ? cfg->desc : "");
    const std::int64_t size = c.group_size != kAbsent ? c.group_size : (cfg ? cfg->size : 0);
    g.size = static_cast<int>(std::clamp<std::int64_t>(size, 0, 1 << 24));
    g.backend = cfg ? cfg->backend : t_.backend;
    const RowId id = w_.add_process_group(g);
    ctx_.process_group_ids.emplace(key, id);
    return id;
  }

  PendingCollective describe_collective(const RawEvent& k, const NcclKernelInfo& info, const RawEvent* launch) {
    PendingCollective p;
    const CommArgs* c = k.comm >= 0 ? &t_.comms[static_cast<std::size_t>(k.comm)] : nullptr;
    if ((!c || c->collective_name.empty()) && k.external_id != kAbsent) {
      if (auto it = comm_ops_.find(k.external_id); it != comm_ops_.end()) c = &t_.comms[static_cast<std::size_t>(it->second)];
    }
    // The `nccl:*` annotation around the launch (older traces carry sizes only there).
    const RawEvent* ann = nullptr;
    if (launch) {
      if (auto it = nccl_index_.find(launch->tid); it != nccl_index_.end()) {
        const std::int64_t idx = it->second.at(launch->ts == kAbsent ? 0 : rel(*launch, launch->ts), -1);
        if (idx >= 0) ann = &t_.events[static_cast<std::size_t>(idx)];
      }
    }
    CollectiveType type = CollectiveType::Unknown;
    if (c && !c->collective_name.empty()) type = collective_type_from_label(c->collective_name);
    if (type == CollectiveType::Unknown && ann) type = collective_type_from_label(ann->name);
    if (type == CollectiveType::Unknown) type = info.type;
    p.type = type;
    std::string dtype;
    if (c && !c->dtype.empty())
      dtype = std::string(c->dtype);
    else if (ann && ann->comm >= 0 && !t_.comms[static_cast<std::size_t>(ann->comm)].input_type.empty())
      dtype = std::string(t_.comms[static_cast<std::size_t>(ann->comm)].input_type);
    else
      dtype = info.dtype;
    const int esize = dtype_size_bytes(dtype);
    std::int64_t nelems = kAbsent;
    if (c) {
      if (type == CollectiveType::AllGather)
        nelems = c->out_nelems != kAbsent ? c->out_nelems : c->in_nelems;
      else
        nelems = c->in_nelems != kAbsent ? c->in_nelems : c->out_nelems;
    }
    if (nelems == kAbsent && ann && ann->comm >= 0) nelems = t_.comms[static_cast<std::size_t>(ann->comm)].input_numel;
    if (nelems != kAbsent && nelems >= 0 && esize > 0 && nelems < INT64_MAX / 16) p.bytes = nelems * esize;
    p.dtype = dtype.empty() ? 0 : w_.intern(dtype);
    if (c) {
      p.group = process_group(*c);
      if (c->group_size != kAbsent && c->group_size > 0 && c->group_size < (1 << 24)) p.group_size = static_cast<int>(c->group_size);
    }
    return p;
  }

  void write_kernels() {
    // Stream kinds need every op on the stream: classify first, then write.
    // A trace repeats a few hundred kernel names thousands of times: classify each name once
    // (the name rules' substring searches were ~8% of a real trace's import). Map nodes do not
    // move, so the pointers stay valid.
    static const NcclKernelInfo not_a_kernel;
    std::unordered_map<std::string_view, NcclKernelInfo> by_name;
    std::vector<const NcclKernelInfo*> nccl(gpu_ops_.size(), &not_a_kernel);
    std::map<std::pair<std::int64_t, std::int64_t>, std::pair<std::int64_t, std::int64_t>> use;  // kernels, NCCL kernels
    for (std::size_t j = 0; j < gpu_ops_.size(); ++j) {
      const RawEvent& e = t_.events[gpu_ops_[j]];
      auto& [kernels, nccl_kernels] = use[{e.device, e.stream}];
      if (e.cat == Cat::Kernel) {
        auto it = by_name.find(e.name);
        if (it == by_name.end()) it = by_name.emplace(e.name, classify_nccl_kernel(e.name)).first;
        nccl[j] = &it->second;
        ++kernels;
        if (nccl[j]->is_comm) ++nccl_kernels;
      }
    }
    for (const auto& [key, u] : use) stream_id(key.first, key.second, stream_kind_of(u.first, u.second));

    std::vector<PendingCollective> colls;
    // The launch rows follow the rank's kernels instead of alternating with them: the writer then
    // inserts long runs of each in multi-row INSERTs (the same rows and ids either way).
    std::vector<LaunchRow> launches;
    launches.reserve(gpu_ops_.size());
    for (std::size_t j = 0; j < gpu_ops_.size(); ++j) {
      const RawEvent& e = t_.events[gpu_ops_[j]];
      KernelRow k;
      k.rank = rank_;
      k.stream = streams_.at({e.device, e.stream});
      k.start = start_of(e);
      k.end = end_of(e);
      k.name = w_.intern(e.name);
      k.correlation = e.correlation == kAbsent ? 0 : e.correlation;
      if (e.launch >= 0) k.launch_config = w_.launch_config(t_.launches[static_cast<std::size_t>(e.launch)]);
      k.category = e.cat == Cat::Memcpy   ? KernelCategory::Memcpy
                   : e.cat == Cat::Memset ? KernelCategory::Memset
                   : nccl[j]->is_comm     ? KernelCategory::Collective
                                          : KernelCategory::Compute;
      if (e.cat != Cat::Kernel && e.bytes != kAbsent) k.bytes = e.bytes;
      const RawEvent* launch = launch_of(e);
      if (launch && launch->ts != kAbsent) k.module = module_at(launch->tid, rel(*launch, launch->ts));
      const RowId id = w_.add_kernel(k);
      if (launch && launch->ts != kAbsent) {
        LaunchRow& l = launches.emplace_back();
        l.kernel = id;
        l.rank = rank_;
        l.thread = thread_id(launch->tid);
        l.start = start_of(*launch);
        l.end = end_of(*launch);
        l.name = w_.intern(launch->name);
      }
      if (nccl[j]->is_comm) {
        PendingCollective p = describe_collective(e, *nccl[j], launch);
        p.kernel = id;
        p.start = k.start;
        p.end = k.end;
        colls.push_back(p);
      }
    }
    for (const LaunchRow& l : launches) w_.add_launch(l);
    // Sequence numbers: 0, 1, 2 ... per process group on this rank, in start order.
    std::stable_sort(colls.begin(), colls.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
    std::map<RowId, std::int64_t> next;
    for (const auto& p : colls) {
      CollectiveRow c;
      c.rank = rank_;
      c.kernel = p.kernel;
      c.type = p.type;
      c.bytes = p.bytes;
      c.dtype = p.dtype;
      c.process_group = p.group;
      c.group_size = p.group_size;
      c.sequence = next[p.group]++;
      c.start = p.start;
      c.end = p.end;
      w_.add_collective(c);
    }
  }

  RowId thread_id(std::int64_t tid) {
    if (auto it = threads_.find(tid); it != threads_.end()) return it->second;
    ThreadInfo ti;
    ti.rank = rank_;
    ti.tid = tid;
    if (thread_names_.empty())
      for (const auto& [t, n] : t_.thread_names) thread_names_[t] = n;
    if (auto it = thread_names_.find(tid); it != thread_names_.end()) ti.name = it->second;
    if (ti.name.empty() && on_autograd_thread(tid)) ti.name = "autograd";
    const RowId id = w_.add_thread(ti);
    threads_.emplace(tid, id);
    return id;
  }

  template <typename Lane>
  void write_lane(std::vector<const CpuRange*>& lane, Lane&& set_lane) {
    std::vector<std::pair<TimeNs, TimeNs>> iv;
    iv.reserve(lane.size());
    for (const auto* r : lane) iv.emplace_back(r->start, r->end);
    add_nested_ranges(w_, iv, [&](std::size_t k) {
      const CpuRange& c = *lane[k];
      RangeRow r;
      r.rank = rank_;
      set_lane(r, c);
      r.start = c.start;
      r.end = c.end;
      r.name = c.name;
      r.kind = c.kind;
      r.phase = c.phase;
      r.module = c.module;
      return r;
    });
  }

  void write_cpu_ranges() {
    std::map<std::int64_t, std::vector<const CpuRange*>> lanes;
    for (auto& r : ranges_) {
      if (r.module == kNoRow) r.module = module_at(r.tid, r.start);
      lanes[r.tid].push_back(&r);
    }
    for (auto& [tid, lane] : lanes) {
      const RowId th = thread_id(tid);
      write_lane(lane, [th](RangeRow& row, const CpuRange&) { row.thread = th; });
    }
  }

  void write_gpu_ranges() {
    std::map<RowId, std::vector<CpuRange>> lanes;
    for (std::size_t i : gpu_ann_) {
      const RawEvent& e = t_.events[i];
      const RowId s = stream_id(e.device, e.stream, StreamKind::Unknown);
      CpuRange r;
      r.start = start_of(e);
      r.end = end_of(e);
      r.name = w_.intern(e.name);
      r.kind = RangeKind::GpuAnnotation;
      lanes[s].push_back(r);
    }
    for (auto& [s, rs] : lanes) {
      std::vector<const CpuRange*> lane;
      for (const auto& r : rs) lane.push_back(&r);
      const RowId sid = s;
      write_lane(lane, [sid](RangeRow& row, const CpuRange&) { row.stream = sid; });
    }
  }

  // A trace that began mid-run (record --steps A:B) has no allocation for the tensors alive then
  // (parameters, gradients, optimizer state), and on a CPU torch.profiler reports no free for them
  // either (it knows no size for a block allocated before it started), nor counts them in its
  // "Total Allocated". The hooks told them ("ss:live:...", with sizes) and their deaths
  // ("ss:freed:<address>", a weakref finalizer): each becomes an allocation at the trace's first
  // memory event (or its fact, if earlier) with a fact for its category and module, and a free
  // at its death, or just before a recorded allocation reuses its address. Kept apart from the
  // unrecorded-free repair, which follows the trace's own totals.
  void add_live_tensors(std::vector<AllocatorEvent>& alloc, std::vector<MemoryEventRow>& rows,
                        std::vector<MemContext>& contexts) {
    if (live_.empty()) return;
    TimeNs at = alloc.empty() ? live_.front().fact.time : alloc.front().time;
    for (const auto& l : live_) at = std::min(at, l.fact.time);
    std::unordered_map<std::int64_t, std::vector<TimeNs>> reused;  // address -> recorded allocations there
    for (const AllocatorEvent& a : alloc)
      if (a.bytes > 0) reused[a.address].push_back(a.time);
    std::sort(freed_.begin(), freed_.end());
    auto add = [&](TimeNs t, std::int64_t address, std::int64_t bytes) {
      MemoryEventRow r;
      r.rank = rank_;
      r.time = t;
      r.address = address;
      r.bytes = bytes;
      alloc.push_back({t, address, bytes, -1, false, rows.size()});
      rows.push_back(r);
      contexts.push_back(MemContext::None);
    };
    std::set<std::int64_t> seen;
    for (const auto& l : live_) {
      const std::int64_t address = l.fact.address;
      if (!seen.insert(address).second) continue;
      add(at, address, l.bytes);
      facts_.push_back(l.fact);
      std::optional<TimeNs> end;
      auto d = std::lower_bound(freed_.begin(), freed_.end(), std::make_pair(address, l.fact.time));
      if (d != freed_.end() && d->first == address) end = d->second;
      if (auto r = reused.find(address); r != reused.end())
        for (TimeNs t : r->second)
          if (t >= at) {
            if (!end || t < *end) end = t;
            break;
          }
      if (end) add(*end, address, -l.bytes);
    }
    stable_sort_runs(alloc.begin(), alloc.end(), [](const AllocatorEvent& a, const AllocatorEvent& b) { return a.time < b.time; });
  }

  // Memory events of the device (c10::DeviceType 1, CUDA; 0, the CPU, when the CPU is the device),
  // each with its category (memory_categories.h) and module. What was allocated before the trace
  // began (the first event's "Total Allocated" less its own bytes) becomes one allocation at the
  // trace's first memory event, so the counter and the peak start from the real level.
  void write_memory() {
    const std::int64_t device_type = cpu_device() ? 0 : 1;
    std::vector<MemoryEventRow> rows;
    std::vector<AllocatorEvent> alloc;  // the same events, for the unrecorded-free repair
    std::vector<MemContext> contexts;
    std::vector<std::int64_t> tids;  // by row: the thread that made it
    for (std::size_t i : memory_) {
      const RawEvent& e = t_.events[i];
      if (e.mem < 0) {
        ctx_.skip(rank_, "[memory] event without Addr/Bytes");
        continue;
      }
      const MemArgs& m = t_.mems[static_cast<std::size_t>(e.mem)];
      if (m.device_type != kAbsent && m.device_type != device_type) {
        ctx_.skip(rank_, cpu_device() ? "[memory] event for a GPU in a CPU-only trace" : "[memory] event for a non-CUDA device");
        continue;
      }
      MemoryEventRow r;
      r.rank = rank_;
      r.time = start_of(e);
      r.address = m.addr;
      r.bytes = m.bytes;
      r.module = module_at(e.tid, r.time);
      // gloo's worker threads allocate their own staging buffers: tagged with the comm lane, so a
      // view can tell them from the training thread's tensors (PyTorch's memory trackers see only those).
      if (cpu_device() && gloo_tids_.count(e.tid)) r.stream = cpu_stream(e.tid, StreamKind::Nccl, "gloo worker ");
      alloc.push_back({r.time, r.address, r.bytes, m.total_allocated == kAbsent ? -1 : m.total_allocated, false, rows.size()});
      contexts.push_back(mem_context_at(e.tid, r.time));
      tids.push_back(e.tid);
      rows.push_back(r);
    }
    stable_sort_runs(alloc.begin(), alloc.end(), [](const AllocatorEvent& a, const AllocatorEvent& b) { return a.time < b.time; });
    // What was allocated before the trace began (the first event's "Total Allocated" less its own
    // bytes) becomes one allocation at the first memory event, so the counter starts at the real level.
    std::int64_t before = 0;
    if (!alloc.empty() && alloc.front().total_allocated >= 0) {
      const Wide b = static_cast<Wide>(alloc.front().total_allocated) - alloc.front().bytes;
      if (b > 0 && b < static_cast<Wide>(INT64_MAX / 4)) before = static_cast<std::int64_t>(b);
    }
    alloc = add_unrecorded_frees(std::move(alloc), before);
    std::int64_t lost = 0, lost_at_run_end = 0;
    if (cpu_device()) alloc = place_lost_frees(std::move(alloc), tids, &lost, &lost_at_run_end);
    add_live_tensors(alloc, rows, contexts);

    std::vector<MemoryEventRow> out;
    std::vector<MemoryEventIn> ins;
    if (before > 0) {
      MemoryEventRow r;
      r.rank = rank_;
      r.time = alloc.front().time;
      r.address = 0;  // no tensor: the level the trace started from
      r.bytes = before;
      out.push_back(r);
      ins.push_back({r.time, r.address, r.bytes, MemContext::None});
    }
    std::int64_t repaired = 0;
    for (const AllocatorEvent& a : alloc) {
      MemoryEventRow r = rows[a.source];
      MemContext c = contexts[a.source];
      if (a.synthetic) {
        r.time = a.time;
        r.bytes = a.bytes;
        c = MemContext::None;
        ++repaired;
      }
      out.push_back(r);
      // On a CPU the training thread's frees are recorded: one added here was gloo's worker's.
      ins.push_back({r.time, r.address, r.bytes, c, a.synthetic && cpu_device()});
    }
    if (repaired > lost)
      ctx_.skip(rank_, "[memory] free the profiler did not record (inferred: address reused; time from Total Allocated)", repaired - lost);
    if (lost > lost_at_run_end)
      ctx_.skip(rank_, "[memory] free lost on gloo's worker thread (placed where the same block is freed in another step)",
                lost - lost_at_run_end);
    if (lost_at_run_end)
      ctx_.skip(rank_, "[memory] free lost on gloo's worker thread (made in the collective call: placed where gloo's run of it ended)",
                lost_at_run_end);
    std::vector<int> fact_of;
    const std::vector<MemoryCategory> cats = classify_memory(ins, step_phases_, facts_, &fact_of);
    for (std::size_t k = 0; k < out.size(); ++k) {
      out[k].category = cats[k];
      // A fact that names the tensor's module (a parameter's, its optimizer state's) owns it: such
      // tensors are made outside every module range (fully_shard, the optimizer).
      if (fact_of[k] >= 0 && facts_[static_cast<std::size_t>(fact_of[k])].has_module)
        out[k].module = fact_module(facts_[static_cast<std::size_t>(fact_of[k])].module);
      w_.add_memory_event(out[k]);
    }
  }

  // The training threads' lost frees (lost_frees.h), placed by their FSDP and module ranges.
  std::vector<AllocatorEvent> place_lost_frees(std::vector<AllocatorEvent> alloc, const std::vector<std::int64_t>& tids,
                                               std::int64_t* lost, std::int64_t* lost_at_run_end) {
    std::vector<std::pair<TimeNs, TimeNs>> steps;
    for (const StepRow& st : steps_) steps.emplace_back(st.start, st.end);
    std::map<std::int64_t, std::vector<TimeNs>> allocations_of_tid;  // recorded allocations, by thread
    for (const AllocatorEvent& a : alloc)
      if (a.bytes > 0 && !a.synthetic && a.source < tids.size()) allocations_of_tid[tids[a.source]].push_back(a.time);
    std::map<std::int64_t, int> lane_of_tid;
    std::vector<ProgramPoints> lanes;
    for (std::int64_t tid : tids) {
      if (gloo_tids_.count(tid) || lane_of_tid.count(tid)) continue;
      std::vector<ProgramPoints::Range> named;
      for (const CpuRange& r : ranges_)
        if (r.tid == tid && (r.kind == RangeKind::Module || r.kind == RangeKind::Fsdp)) named.push_back({r.start, r.end, r.name});
      lane_of_tid[tid] = static_cast<int>(lanes.size());
      lanes.emplace_back(steps, std::move(named), std::move(allocations_of_tid[tid]));
    }
    std::vector<int> lane_of_source(tids.size(), -1);
    for (std::size_t i = 0; i < tids.size(); ++i)
      if (auto it = lane_of_tid.find(tids[i]); it != lane_of_tid.end()) lane_of_source[i] = it->second;
    std::vector<std::pair<std::int64_t, TimeNs>> alive;  // the hooks' facts: a block alive at a time
    for (const TensorFact& f : facts_) alive.emplace_back(f.address, f.time);
    std::sort(alive.begin(), alive.end());
    std::vector<GlooRun> runs;
    for (const IssuedRun& r : gloo_runs_)
      if (auto it = lane_of_tid.find(r.tid); it != lane_of_tid.end()) runs.push_back({it->second, r.issue_start, r.issue_end, r.done});
    return ss::import::place_lost_frees(std::move(alloc), lanes, lane_of_source, lost, alive, std::move(runs), lost_at_run_end);
  }

  RowId fact_module(const std::string& fqn) {
    if (auto it = ctx_.module_ids.find(fqn); it != ctx_.module_ids.end()) return it->second;
    if (fqn.size() > kMaxFqn) return kNoRow;
    RawEvent none;
    return ensure_module(fqn, "", false, true, none);
  }

  MemContext mem_context_at(std::int64_t tid, TimeNs t) {
    auto it = mem_context_index_.find(tid);
    if (it == mem_context_index_.end()) return MemContext::None;
    return static_cast<MemContext>(it->second.at(t, static_cast<std::int64_t>(MemContext::None)));
  }

  // The CPU as the device. Compute lane: the outermost operators of each thread that runs them
  // (the busiest is the training thread: kind compute). Communication lanes: gloo's worker
  // threads, whose `gloo:*` annotations are the collectives as they ran; their type and size come
  // from the `c10d::*` op that issued them on the training thread, matched in issue order per
  // family (gloo runs FSDP2's reduce-scatter as an all-reduce: the issuing op says reduce-scatter,
  // the lane's event keeps gloo's own name).
  void write_cpu_device() {
    std::map<std::int64_t, std::vector<std::size_t>> ops_by_tid;
    std::vector<std::size_t> gloo_events, issued;
    for (std::size_t i : cpu_) {
      const RawEvent& e = t_.events[i];
      if (e.ts == kAbsent || e.dur == kAbsent) continue;
      if (gloo_tids_.count(e.tid)) {
        if (e.cat == Cat::UserAnnotation && starts_with(e.name, "gloo:")) gloo_events.push_back(i);
        continue;
      }
      if (e.cat == Cat::UserAnnotation && starts_with(e.name, "gloo:") && gloo_inline(e.name)) gloo_events.push_back(i);
      if (e.cat != Cat::CpuOp) continue;
      ops_by_tid[e.tid].push_back(i);
      if (starts_with(e.name, "c10d::") && collective_type_from_label(e.name) != CollectiveType::Unknown) issued.push_back(i);
    }
    std::int64_t busiest = kAbsent;
    Wide busiest_ns = -1;
    std::map<std::int64_t, std::vector<CpuPiece>> pieces_by_tid;
    for (auto& [tid, idx] : ops_by_tid) {
      pieces_by_tid[tid] = compute_pieces(tid, idx);
      Wide busy = 0;
      for (const auto& p : pieces_by_tid[tid]) busy += p.end - p.start;
      if (busy > busiest_ns) busiest = tid, busiest_ns = busy;
    }
    for (const auto& [tid, pieces] : pieces_by_tid) {
      const RowId s = cpu_stream(tid, tid == busiest ? StreamKind::Compute : StreamKind::Unknown, "CPU thread ");
      for (const CpuPiece& p : pieces) {
        const RawEvent& e = t_.events[p.event];
        KernelRow k;
        k.rank = rank_;
        k.stream = s;
        k.start = p.start;
        k.end = p.end;
        k.name = w_.intern(e.name);
        k.category = KernelCategory::Compute;
        k.module = module_at(tid, k.start);
        w_.add_kernel(k);
      }
    }
    write_gloo_collectives(gloo_events, issued);
  }

  struct CpuPiece {
    TimeNs start, end;
    std::size_t event;
  };

  // The compute a CPU thread did: its outermost operators, except inside FSDP's own ranges
  // (FSDP::all_gather, ::all_gather_copy_out, ::post_backward_reduce, ::post_backward_rs_wait...),
  // where the thread also blocks on gloo: there only the operators that run inside the range are
  // compute, and the gaps between them are waiting (exposed communication) or host time, as a
  // GPU trace's compute stream would show them.
  std::vector<CpuPiece> compute_pieces(std::int64_t tid, std::vector<std::size_t>& idx) {
    std::vector<TimeInterval> fsdp;
    for (const auto& r : ranges_)
      if (r.tid == tid && r.kind == RangeKind::Fsdp) fsdp.emplace_back(r.start, r.end);
    const std::vector<TimeInterval> merged = interval_union(std::move(fsdp));
    auto containing = [&](TimeNs a, TimeNs b) {  // [a, b] inside one merged FSDP range
      const auto i = interval_holding(merged, a);
      return i >= 0 && b <= merged[static_cast<std::size_t>(i)].second;
    };
    auto before = [&](std::size_t a, std::size_t b) {
      const RawEvent &x = t_.events[a], &y = t_.events[b];
      return x.ts != y.ts ? x.ts < y.ts : x.dur > y.dur;
    };
    // Kineto writes a thread's operators in this order already (120,000 per rank file of a CPU
    // trace, each compared through its event record): the sort runs only when they are not.
    if (!strictly_sorted(idx.begin(), idx.end(), before)) std::sort(idx.begin(), idx.end(), before);
    std::vector<CpuPiece> out;
    TimeNs open_end = INT64_MIN, open_inner_end = INT64_MIN;
    for (std::size_t i : idx) {
      const RawEvent& e = t_.events[i];
      const TimeNs a = start_of(e), b = end_of(e);
      if (containing(a, b)) {  // inside FSDP's range: outermost among those inside is compute
        if (a >= open_inner_end) {
          open_inner_end = b;
          out.push_back({a, b, i});
        }
      }
      if (a < open_end) continue;  // nested in the open outermost op
      open_end = b;
      // The outermost op less the FSDP ranges it overlaps.
      TimeNs cur = a;
      auto it = std::upper_bound(merged.begin(), merged.end(), a, [](TimeNs t, const auto& iv) { return t < iv.first; });
      if (it != merged.begin() && std::prev(it)->second > a) --it;
      for (; it != merged.end() && it->first < b && cur < b; ++it) {
        if (it->first > cur) out.push_back({cur, it->first, i});
        cur = std::max(cur, it->second);
      }
      if (cur < b) out.push_back({cur, b, i});
    }
    auto by_start = [](const CpuPiece& x, const CpuPiece& y) { return x.start < y.start; };
    if (!strictly_sorted(out.begin(), out.end(), by_start)) std::sort(out.begin(), out.end(), by_start);
    return out;
  }

  static bool gloo_inline(std::string_view name) { return name == "gloo:send" || name == "gloo:recv"; }

  // The group of a c10d op issued inside the recorder's "ss:pg:<name>" range (send / recv, whose
  // gloo events run on the calling thread): null when it is in none or the name is not a group.
  const ProcessGroupConfig* group_of_issuer(const RawEvent& op) const {
    auto it = pg_ranges_.find(op.tid);
    if (it == pg_ranges_.end() || op.ts == kAbsent) return nullptr;
    for (const PgRange& r : it->second)  // few: one per send / recv
      if (r.start <= op.ts && op.ts < r.end)
        for (const auto& g : t_.process_groups)
          if (g.name == r.name) return &g;
    return nullptr;
  }

  // The process group of a gloo event: its thread's, as the recorder noted the threads each
  // group's creation started (KinetoTrace::pg_threads); null when the trace does not say.
  const ProcessGroupConfig* group_of_thread(std::int64_t tid) {
    if (!pg_of_tid_built_) {  // once, even when no thread's group is named in the trace
      pg_of_tid_built_ = true;
      std::map<std::string, const ProcessGroupConfig*> by_name;
      for (const auto& g : t_.process_groups) by_name.emplace(g.name, &g);
      for (const auto& [t, name] : t_.pg_threads)
        if (auto it = by_name.find(name); it != by_name.end()) pg_of_tid_.emplace(t, it->second);
    }
    auto it = pg_of_tid_.find(tid);
    return it == pg_of_tid_.end() ? nullptr : it->second;
  }

  // "ss:cb:<elements>:<dtype>" (profiler/python/shardscope/_collective_sizes.py): the size of the
  // collective API call it encloses, for traces recorded without record_shapes.
  struct SizeRange {
    std::int64_t start, end, numel;
    std::string_view dtype;
  };
  void add_size_range(const RawEvent& e) {
    std::string_view rest = e.name.substr(6);
    const std::size_t colon = rest.find(':');
    if (colon == std::string_view::npos) return;
    std::int64_t n = 0;
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + colon, n);
    if (ec != std::errc() || end != rest.data() + colon || n < 0) return;
    size_ranges_[e.tid].push_back({e.ts, e.ts + e.dur, n, rest.substr(colon + 1)});
  }
  // The size range around a c10d op (ranges on one thread do not overlap: the recorder annotates
  // only the outermost call); sorted once, then a binary search per op.
  const SizeRange* size_range_of(const RawEvent& op) {
    auto it = size_ranges_.find(op.tid);
    if (it == size_ranges_.end() || op.ts == kAbsent) return nullptr;
    auto& v = it->second;
    if (!size_ranges_sorted_) {
      for (auto& [tid, list] : size_ranges_)
        std::sort(list.begin(), list.end(), [](const SizeRange& a, const SizeRange& b) { return a.start < b.start; });
      size_ranges_sorted_ = true;
    }
    auto r = std::upper_bound(v.begin(), v.end(), op.ts, [](TimeNs t, const SizeRange& x) { return t < x.start; });
    if (r == v.begin()) return nullptr;
    --r;
    return op.ts < r->end ? &*r : nullptr;
  }

  // Collectives of the same family pair up in order: gloo executes one PG's work in issue order.
  static int collective_family(CollectiveType t) {
    switch (t) {
      case CollectiveType::AllGather: return 1;
      case CollectiveType::AllReduce:
      case CollectiveType::ReduceScatter: return 2;  // gloo: reduce-scatter runs as an all-reduce
      default: return 3 + static_cast<int>(t);
    }
  }

  // Elements a collective moves as the c10d op that issued it says (output of an all-gather,
  // input of a reduce-scatter, the buffer of an all-reduce), or as gloo's own event says (its
  // first tensor: the shard for an all-gather, the full buffer for an all-reduce).
  std::int64_t issued_numel(const RawEvent& issuer) {
    if (issuer.comm >= 0) {
      const CommArgs& a = t_.comms[static_cast<std::size_t>(issuer.comm)];
      const std::int64_t n =
          collective_type_from_label(issuer.name) == CollectiveType::ReduceScatter ? a.input_numel2 : a.input_numel;
      if (n != kAbsent) return n;
    }
    const SizeRange* r = size_range_of(issuer);
    return r ? r->numel : kAbsent;
  }
  std::int64_t ran_numel(const RawEvent& e, int group_size) const {
    if (e.comm < 0 || t_.comms[static_cast<std::size_t>(e.comm)].input_numel == kAbsent) return kAbsent;
    const std::int64_t n = t_.comms[static_cast<std::size_t>(e.comm)].input_numel;
    return collective_type_from_label(e.name) == CollectiveType::AllGather && group_size > 0 && n < INT64_MAX / (1 << 24)
               ? n * group_size
               : n;
  }

  // gloo runs a process group's work on two worker threads, so collectives may start out of issue
  // order. Each one pairs with the earliest unpaired op of its family issued before it ended whose
  // size matches; sequence numbers follow the issue order, which is the program's on every rank.
  void write_gloo_collectives(std::vector<std::size_t>& ran, std::vector<std::size_t>& issued) {
    auto by_time = [&](std::size_t a, std::size_t b) { return t_.events[a].ts < t_.events[b].ts; };
    std::sort(ran.begin(), ran.end(), by_time);
    std::sort(issued.begin(), issued.end(), by_time);
    // A c10d op nested in another (a TorchDispatchMode such as FSDPMemTracker re-dispatches it,
    // and the profiler records both) issued nothing of its own.
    {
      std::map<std::int64_t, TimeNs> open_until;  // tid -> end of the last outermost c10d op
      std::vector<std::size_t> outer;
      for (std::size_t i : issued) {
        const RawEvent& op = t_.events[i];
        auto it = open_until.find(op.tid);
        if (it != open_until.end() && op.ts < it->second) continue;
        open_until[op.tid] = op.ts + op.dur;
        outer.push_back(i);
      }
      issued.swap(outer);
    }
    // Each event's group: its worker thread's when the recorder noted them, else the only group
    // there is, else unknown (the world's size stands in, as before the threads were noted).
    const ProcessGroupConfig* only_group = t_.process_groups.size() == 1 ? &t_.process_groups.front() : nullptr;
    auto group_config = [&](const RawEvent& e, const RawEvent* issuer = nullptr) {
      const ProcessGroupConfig* g = group_of_thread(e.tid);
      if (!g && issuer) g = group_of_issuer(*issuer);
      return g ? g : only_group;
    };
    auto group_row = [&](const ProcessGroupConfig* g) {
      if (!g) return kNoRow;
      CommArgs c;
      c.pg_name = g->name;
      c.pg_ranks = g->ranks;
      return process_group(c);
    };
    auto size_of = [&](const ProcessGroupConfig* g) {
      return g ? static_cast<int>(std::clamp<std::int64_t>(g->size, 0, 1 << 24)) : (t_.world_size > 0 ? t_.world_size : 0);
    };
    std::vector<bool> used(issued.size(), false);
    std::map<int, std::vector<std::size_t>> by_family;  // positions in `issued`, in issue order
    for (std::size_t k = 0; k < issued.size(); ++k)
      by_family[collective_family(collective_type_from_label(t_.events[issued[k]].name))].push_back(k);
    std::map<int, std::size_t> first_unused;
    struct Paired {
      std::size_t ran;
      const RawEvent* issuer;
    };
    std::vector<Paired> pairs;
    for (std::size_t i : ran) {
      const RawEvent& e = t_.events[i];
      const int family = collective_family(collective_type_from_label(e.name));
      const std::int64_t size = ran_numel(e, size_of(group_config(e)));
      std::size_t pick = SIZE_MAX, fallback = SIZE_MAX;
      const auto& list = by_family[family];
      std::size_t& cur = first_unused[family];
      while (cur < list.size() && used[list[cur]]) ++cur;
      for (std::size_t j = cur; j < list.size(); ++j) {  // a short scan: pairs are nearly in order
        const std::size_t k = list[j];
        if (used[k]) continue;
        const RawEvent& op = t_.events[issued[k]];
        if (op.ts > e.ts + e.dur) break;
        if (fallback == SIZE_MAX) fallback = k;
        if (size == kAbsent || issued_numel(op) == size) {
          pick = k;
          break;
        }
      }
      if (pick == SIZE_MAX) pick = fallback;
      if (pick != SIZE_MAX) used[pick] = true;
      pairs.push_back({i, pick == SIZE_MAX ? nullptr : &t_.events[issued[pick]]});
    }
    std::stable_sort(pairs.begin(), pairs.end(), [&](const Paired& a, const Paired& b) {
      const TimeNs ta = a.issuer ? a.issuer->ts : t_.events[a.ran].ts, tb = b.issuer ? b.issuer->ts : t_.events[b.ran].ts;
      return ta < tb;
    });
    std::int64_t sequence = 0;
    for (const Paired& pr : pairs) {
      const RawEvent& e = t_.events[pr.ran];
      const RawEvent* issuer = pr.issuer;
      KernelRow k;
      k.rank = rank_;
      // send / recv ran on the training thread: a p2p lane of their own beside its compute lane.
      const bool inline_p2p = !gloo_tids_.count(e.tid);
      k.stream = inline_p2p ? cpu_stream(e.tid, StreamKind::Nccl, "gloo p2p on thread ", -2)
                            : cpu_stream(e.tid, StreamKind::Nccl, "gloo worker ");
      k.start = start_of(e);
      k.end = end_of(e);
      k.name = w_.intern(e.name);
      k.category = KernelCategory::Collective;
      k.module = issuer ? module_at(issuer->tid, start_of(*issuer)) : kNoRow;
      if (issuer && !inline_p2p) gloo_runs_.push_back({issuer->tid, start_of(*issuer), end_of(*issuer), k.end});
      const RowId kid = w_.add_kernel(k);

      CollectiveRow c;
      c.rank = rank_;
      c.kernel = kid;
      c.type = issuer ? collective_type_from_label(issuer->name) : collective_type_from_label(e.name);
      const CommArgs* ia = issuer && issuer->comm >= 0 ? &t_.comms[static_cast<std::size_t>(issuer->comm)] : nullptr;
      const CommArgs* ra = e.comm >= 0 ? &t_.comms[static_cast<std::size_t>(e.comm)] : nullptr;
      // The issuing op's element type, unless it names none (a TensorList argument): then gloo's.
      const SizeRange* sized = issuer ? size_range_of(*issuer) : nullptr;
      std::string_view dtype = ia && dtype_size_bytes(ia->input_type) > 0 ? ia->input_type
                               : sized                                      ? sized->dtype
                               : ra                                         ? ra->input_type
                                                                            : std::string_view{};
      const int esize = dtype_size_bytes(dtype);
      const ProcessGroupConfig* g = group_config(e, issuer);
      const int group_size = size_of(g);
      std::int64_t numel = issuer ? issued_numel(*issuer) : kAbsent;
      if (numel == kAbsent) numel = ran_numel(e, group_size);
      if (numel != kAbsent && numel >= 0 && esize > 0 && numel < INT64_MAX / 16) c.bytes = numel * esize;
      c.dtype = dtype.empty() ? 0 : w_.intern(dtype);
      c.process_group = group_row(g);
      c.group_size = group_size;
      c.sequence = sequence++;
      c.start = k.start;
      c.end = k.end;
      w_.add_collective(c);
    }
  }

  RowId cpu_stream(std::int64_t tid, StreamKind kind, const std::string& label, std::int64_t lane = -1) {
    auto key = std::make_pair(lane, tid);
    if (auto it = streams_.find(key); it != streams_.end()) return it->second;
    StreamInfo s;
    s.rank = rank_;
    s.device = -1;  // the CPU
    s.native_id = lane == -1 ? tid : -tid;  // a thread's second lane (its inline p2p) keeps ids distinct
    s.kind = kind;
    if (thread_names_.empty())
      for (const auto& [t, n] : t_.thread_names) thread_names_[t] = n;
    auto nm = thread_names_.find(tid);
    s.name = label + std::to_string(tid) + (nm != thread_names_.end() && !nm->second.empty() ? " (" + nm->second + ")" : "");
    const RowId id = w_.add_stream(s);
    streams_.emplace(key, id);
    return id;
  }

  const KinetoTrace& t_;
  const std::string& path_;
  ImportContext& ctx_;
  ProfileWriter& w_;
  int rank_ = 0;
  Wide shift_ = 0;
  std::vector<std::size_t> gpu_ops_, gpu_ann_, cpu_, memory_;
  std::unordered_map<std::int64_t, std::size_t> launches_;  // correlation -> runtime event
  std::unordered_map<std::int64_t, std::int32_t> comm_ops_; // External id -> record_param_comms args
  std::map<std::int64_t, bool> autograd_tids_;
  std::map<std::int64_t, std::vector<std::pair<TimeNs, TimeNs>>> backward_spans_, backward_merged_;
  std::vector<CpuRange> ranges_;
  std::vector<const RawEvent*> nccl_annotations_;
  // A lane's index, and where its last query landed: the queries (ranges, memory events, compute
  // pieces) come in time order per lane, so most find their step at once, without a search.
  struct LaneIndex {
    InnermostRangeIndex index;
    std::size_t hint = 0;
    std::int64_t at(TimeNs t, std::int64_t none) { return index.at(t, none, hint); }
  };
  std::map<std::int64_t, LaneIndex> module_index_, nccl_index_;
  std::map<std::pair<std::int64_t, std::int64_t>, RowId> streams_;
  std::map<std::int64_t, RowId> threads_;
  std::map<std::int64_t, std::string> thread_names_;
  std::multimap<std::string, const ProcessGroupConfig*> pg_configs_;
  std::set<std::int64_t> steps_seen_;
  struct HookStep {
    std::int64_t number;
    TimeNs start, end;
  };
  std::vector<HookStep> hook_steps_;
  std::vector<StepRow> steps_;
  std::vector<StepPhases> step_phases_;
  std::vector<TimeNs> backward_starts_, optimizer_starts_;
  std::optional<TimeNs> first_module_start_;
  std::vector<TensorFact> facts_;
  std::vector<LiveTensor> live_;  // "ss:live:" tensors (add_live_tensors)
  std::vector<std::pair<std::int64_t, TimeNs>> freed_;  // "ss:freed:" (address, time)
  std::set<std::int64_t> gloo_tids_;
  struct IssuedRun {  // a collective gloo's worker ran, by the training thread's op that issued it
    std::int64_t tid;
    TimeNs issue_start, issue_end, done;
  };
  std::vector<IssuedRun> gloo_runs_;
  std::map<std::int64_t, const ProcessGroupConfig*> pg_of_tid_;
  bool pg_of_tid_built_ = false;
  struct PgRange {
    std::int64_t start, end;
    std::string_view name;
  };
  std::map<std::int64_t, std::vector<PgRange>> pg_ranges_;  // tid -> "ss:pg:" ranges, as the trace has them
  std::map<std::int64_t, std::vector<SizeRange>> size_ranges_;  // tid -> "ss:cb:" ranges
  bool size_ranges_sorted_ = false;
  std::map<std::int64_t, LaneIndex> mem_context_index_;
};

}  // namespace

void write_trace(const KinetoTrace& trace, const std::string& path, ImportContext& ctx) {
  Builder(trace, path, ctx).run();
}

}  // namespace ss::import::kineto
