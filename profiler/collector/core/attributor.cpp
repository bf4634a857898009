#include "profiler/collector/core/attributor.h"

#include <algorithm>

#include "profiler/common/module_range_name.h"
#include "profiler/common/nccl_names.h"

namespace ss::collector {
namespace {

// Module ranges older than this behind the cutoff are forgotten.
constexpr TimeNs kForgetAfter = 60'000'000'000;
// An API record is dropped when its GPU record has been resolved (except graph launches, whose
// one correlation id covers every kernel of the graph), or this long behind the cutoff: memory
// stays bounded at 100k+ launches per second.
constexpr TimeNs kForgetApiAfter = 10'000'000'000;

ResolvedLaunch launch_of(const ApiRecord& a) { return {a.tid, a.start, std::max(a.end, a.start), a.name}; }

bool is_graph_launch(const ApiRecord& a) {
  // cudaGraphLaunch_v10000 (311), its _ptsz (312); cuGraphLaunch (514), cuGraphLaunch_ptsz (515)
  return a.driver ? (a.cbid == 514 || a.cbid == 515) : (a.cbid == 311 || a.cbid == 312);
}
// Fallback communicator key when NCCL payloads are missing (NCCL_NVTX_DISABLE, old CUPTI):
// PyTorch runs each communicator on its own stream, so sequence numbers are counted per stream.
constexpr std::uint64_t kStreamKeyFlag = 1ull << 63;

std::string copy_name(const CopyRecord& c) {
  if (c.is_memset) return "Memset";
  switch (c.copy_kind) {  // CUpti_ActivityMemcpyKind
    case 1: return "Memcpy HtoD";
    case 2: return "Memcpy DtoH";
    case 3: return "Memcpy HtoA";
    case 4: return "Memcpy AtoH";
    case 5: return "Memcpy AtoA";
    case 6: return "Memcpy AtoD";
    case 7: return "Memcpy DtoA";
    case 8: return "Memcpy DtoD";
    case 9: return "Memcpy HtoH";
    case 10: return "Memcpy PtoP";
    default: return "Memcpy";
  }
}

}  // namespace

void Attributor::add(const ApiRecord& r) {
  note_time(r.end);
  api_[r.correlation] = r;
}

void Attributor::add(KernelRecord r) { kernels_.push_back(std::move(r)); }
void Attributor::add(const CopyRecord& r) { copies_.push_back(r); }
void Attributor::add(const MemoryRecord& r) {
  note_time(r.timestamp);
  memory_.push_back(r);
}
void Attributor::add(MarkerPayload p) {
  const auto id = p.marker_id;
  payloads_[id] = std::move(p);
}

void Attributor::add(const MarkerRecord& r) {
  note_time(r.timestamp);
  if (r.flags & MarkerRecord::kStart) {
    OpenMarker m{r.tid, r.timestamp, r.name, r.domain};
    if (r.domain.empty())
      if (auto mod = parse_module_range_name(r.name); mod && !mod->optimizer) {
        lanes_.open(r.tid, r.id, r.timestamp, mod->fqn, mod->phase);
        if (mod->phase == RangePhase::Forward && (!first_module_start_ || r.timestamp < *first_module_start_))
          first_module_start_ = r.timestamp;
      }
    if (auto e = early_ends_.find(r.id); e != early_ends_.end()) {
      const TimeNs end = e->second;
      early_ends_.erase(e);
      lanes_.close(r.tid, r.id, end);
      complete_marker(r.id, m, end);
      return;
    }
    open_markers_[r.id] = std::move(m);
  } else if (r.flags & MarkerRecord::kEnd) {
    auto it = open_markers_.find(r.id);
    if (it == open_markers_.end()) {
      early_ends_[r.id] = r.timestamp;  // the START may sit in another thread's buffer
      return;
    }
    OpenMarker m = std::move(it->second);
    open_markers_.erase(it);
    if (!lanes_.close(m.tid, r.id, r.timestamp)) lanes_.close_any_thread(r.id, r.timestamp);
    complete_marker(r.id, m, r.timestamp);
  }
}

void Attributor::complete_marker(std::uint64_t id, const OpenMarker& m, TimeNs end) {
  ResolvedRange out;
  out.tid = m.tid;
  out.start = m.start;
  out.end = std::max(end, m.start);
  if (m.domain.empty()) {
    if (auto mod = parse_module_range_name(m.name)) {
      if (mod->optimizer) {
        out.name = "optimizer.step";
        out.phase = RangePhase::Optimizer;
        ResolvedStep s;
        s.number = mod->step;
        s.start = last_step_end_ ? *last_step_end_ : first_module_start_ ? std::min(*first_module_start_, m.start) : m.start;
        s.end = out.end;
        done_steps_.push_back(s);
        last_step_end_ = out.end;
      } else {
        out.name = module_range_display_name(mod->fqn);
        out.kind = RangeKind::Module;
        out.phase = mod->phase;
        out.module = mod->fqn;
      }
      done_ranges_.push_back(std::move(out));
      payloads_.erase(id);
      return;
    }
  }
  out.name = m.name;
  if (m.domain == "NCCL") {
    out.kind = RangeKind::Nccl;
    if (is_nccl_collective_function(m.name)) {
      nccl_calls_.push_back({m.tid, m.start, out.end, m.name, id, false});
    } else if (m.name.rfind("ncclCommInitRank", 0) == 0 || m.name == "ncclCommSplit") {
      if (auto p = payloads_.find(id); p != payloads_.end()) {
        if (auto c = decode_nccl_payload("ncclCommInitRank", 0, p->second.bytes); c && c->has_comm)
          comm_sizes_[c->comm] = c->nranks;
        payloads_.erase(p);
      }
    }
  } else {
    payloads_.erase(id);
  }
  done_ranges_.push_back(std::move(out));
}

std::optional<std::string> Attributor::module_at(std::uint32_t correlation, const ApiRecord** api_out) const {
  auto it = api_.find(correlation);
  if (api_out) *api_out = it == api_.end() ? nullptr : &it->second;
  if (it == api_.end()) return std::nullopt;
  if (const LaneRange* r = lanes_.innermost(it->second.tid, it->second.start)) return r->fqn;
  return std::nullopt;
}

ResolvedCollective Attributor::collective_from_call(const NcclPending& call, const std::string& dtype, TimeNs start,
                                                    TimeNs end) {
  ResolvedCollective c;
  c.type = collective_type_from_label(call.function);
  c.dtype = dtype;
  c.start = start;
  c.end = end;
  std::optional<NcclCall> decoded;
  if (auto p = payloads_.find(call.marker_id); p != payloads_.end()) {
    decoded = decode_nccl_payload(call.function, p->second.schema_id, p->second.bytes);
    payloads_.erase(p);
  }
  if (decoded) {
    c.has_comm = decoded->has_comm;
    c.comm = decoded->comm;
    if (decoded->has_comm)
      if (auto s = comm_sizes_.find(decoded->comm); s != comm_sizes_.end()) c.group_size = s->second;
    c.bytes = full_buffer_bytes(*decoded, c.group_size);
  }
  return c;
}

std::vector<ResolvedCollective> Attributor::take_nccl_calls(const ApiRecord& api, const std::string& dtype,
                                                            CollectiveType kernel_type, TimeNs start, TimeNs end) {
  std::vector<NcclPending*> calls;
  for (auto& c : nccl_calls_)
    if (!c.consumed && c.tid == api.tid && c.start <= api.start) calls.push_back(&c);
  std::sort(calls.begin(), calls.end(), [](auto* a, auto* b) { return a->start < b->start; });
  std::vector<ResolvedCollective> out;
  for (auto* c : calls) {
    c->consumed = true;
    out.push_back(collective_from_call(*c, dtype, start, end));
  }
  (void)kernel_type;
  return out;
}

void Attributor::resolve(TimeNs cutoff, bool all, AttributionSink& sink) {
  // Kernels, in launch order so that sequence numbers follow issue order.
  struct Ready {
    TimeNs ref;
    KernelRecord k;
  };
  std::vector<Ready> ready;
  {
    std::deque<KernelRecord> keep;
    for (auto& k : kernels_) {
      auto it = api_.find(k.correlation);
      const TimeNs ref = it != api_.end() ? it->second.start : k.start;
      if (all || ref < cutoff)
        ready.push_back({ref, std::move(k)});
      else
        keep.push_back(std::move(k));
    }
    kernels_.swap(keep);
  }
  std::stable_sort(ready.begin(), ready.end(), [](const Ready& a, const Ready& b) { return a.ref < b.ref; });
  for (auto& [ref, k] : ready) {
    ResolvedKernel out;
    out.start = k.start;
    out.end = k.end;
    out.device = k.device;
    out.stream = k.stream;
    out.correlation = k.correlation;
    out.config = k.config;
    const ApiRecord* api = nullptr;
    out.module = module_at(k.correlation, &api);
    if (!api) ++stats_.kernels_without_launch;
    else out.launch = launch_of(*api);
    const NcclKernelInfo nccl = classify_nccl_kernel(k.name);
    if (nccl.is_comm) {
      out.category = KernelCategory::Collective;
      if (api) out.collectives = take_nccl_calls(*api, nccl.dtype, nccl.type, k.start, k.end);
      if (out.collectives.empty()) {
        ResolvedCollective c;
        c.type = nccl.type;
        c.dtype = nccl.dtype;
        c.start = k.start;
        c.end = k.end;
        out.collectives.push_back(c);
      }
      for (auto& c : out.collectives) {
        const std::uint64_t key = c.has_comm ? c.comm : (kStreamKeyFlag | (std::uint64_t(k.device) << 32) | k.stream);
        c.sequence = sequencer_.next(key);
      }
    }
    out.name = std::move(k.name);
    sink.on_kernel(out);
    if (api && !is_graph_launch(*api)) api_.erase(k.correlation);
  }

  // Copies and memsets.
  {
    std::vector<std::pair<TimeNs, CopyRecord>> ready_copies;
    std::deque<CopyRecord> keep;
    for (auto& c : copies_) {
      auto it = api_.find(c.correlation);
      const TimeNs ref = it != api_.end() ? it->second.start : c.start;
      if (all || ref < cutoff)
        ready_copies.emplace_back(ref, c);
      else
        keep.push_back(c);
    }
    copies_.swap(keep);
    std::stable_sort(ready_copies.begin(), ready_copies.end(), [](auto& a, auto& b) { return a.first < b.first; });
    for (auto& [ref, c] : ready_copies) {
      ResolvedKernel out;
      out.category = c.is_memset ? KernelCategory::Memset : KernelCategory::Memcpy;
      out.start = c.start;
      out.end = c.end;
      out.device = c.device;
      out.stream = c.stream;
      out.correlation = c.correlation;
      out.bytes = c.bytes;
      out.name = copy_name(c);
      const ApiRecord* api = nullptr;
      out.module = module_at(c.correlation, &api);
      if (api) out.launch = launch_of(*api);
      sink.on_kernel(out);
      if (api && !is_graph_launch(*api)) api_.erase(c.correlation);
    }
  }

  // Allocations and releases, in time order so that a release finds its allocation's owner.
  {
    std::vector<MemoryRecord> ready_mem;
    std::deque<MemoryRecord> keep;
    for (auto& m : memory_) {
      if (all || m.timestamp < cutoff)
        ready_mem.push_back(m);
      else
        keep.push_back(m);
    }
    memory_.swap(keep);
    std::stable_sort(ready_mem.begin(), ready_mem.end(), [](auto& a, auto& b) { return a.timestamp < b.timestamp; });
    for (const auto& m : ready_mem) {
      if (m.memory_kind != kMemoryKindDevice) {
        ++stats_.non_device_memory;
        continue;
      }
      ResolvedMemory out;
      out.time = m.timestamp;
      out.address = m.address;
      out.device = m.device;
      out.stream = m.stream;
      if (m.allocation) {
        out.bytes = m.bytes;
        out.module = module_at(m.correlation, nullptr);
        live_allocations_[m.address] = out.module;
      } else {
        out.bytes = -m.bytes;
        if (auto it = live_allocations_.find(m.address); it != live_allocations_.end()) {
          out.module = it->second;  // the owner is whoever allocated it
          live_allocations_.erase(it);
        } else {
          out.module = module_at(m.correlation, nullptr);
        }
      }
      sink.on_memory(out);
      api_.erase(m.correlation);
    }
  }

  // NCCL calls whose kernel never came (dropped records): keep them as collectives on API time.
  for (auto& c : nccl_calls_) {
    if (c.consumed || !(all || c.end < cutoff - settle_)) continue;
    c.consumed = true;
    ++stats_.nccl_calls_without_kernel;
    ResolvedCollective rc = collective_from_call(c, "", c.start, c.end);
    rc.sequence = sequencer_.next(rc.has_comm ? rc.comm : 0);
    sink.on_collective(rc);
  }
  std::erase_if(nccl_calls_, [](const NcclPending& c) { return c.consumed; });

  for (const auto& r : done_ranges_) sink.on_range(r);
  done_ranges_.clear();
  for (const auto& s : done_steps_) sink.on_step(s);
  done_steps_.clear();

  const TimeNs forget = cutoff - kForgetAfter;
  const TimeNs forget_api = cutoff - kForgetApiAfter;
  std::erase_if(api_, [&](const auto& kv) { return kv.second.end < forget_api; });
  lanes_.prune(forget);
}

void Attributor::drain(TimeNs now, AttributionSink& sink) { resolve(now - settle_, false, sink); }

void Attributor::drain_all(AttributionSink& sink) {
  // Ranges still open at the end (the job was interrupted) are closed at the newest time seen.
  for (auto& [id, m] : open_markers_) {
    ++stats_.unclosed_ranges;
    lanes_.close(m.tid, id, newest_);
    complete_marker(id, m, newest_);
  }
  open_markers_.clear();
  stats_.unpaired_marker_ends += static_cast<std::int64_t>(early_ends_.size());
  early_ends_.clear();
  resolve(0, true, sink);
}

}  // namespace ss::collector
