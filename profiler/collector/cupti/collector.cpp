#include "profiler/collector/cupti/collector.h"

#include <cupti.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "profiler/collector/core/attributor.h"
#include "profiler/collector/core/buffer_queue.h"
#include "profiler/collector/core/log_once.h"
#include "profiler/collector/core/rank_file_writer.h"
#include "profiler/collector/core/rank_identity.h"
#include "profiler/collector/core/step_window.h"
#include "profiler/collector/cupti/activity_decode.h"
#include "profiler/collector/cupti/nvtx_release.h"

namespace ss::collector {
namespace {

constexpr std::size_t kBufferBytes = 8u << 20;  // CUPTI recommends 1-10 MB host buffers
constexpr auto kCommitPeriod = std::chrono::milliseconds(1000);

TimeNs realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<TimeNs>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string cupti_error(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s ? s : ("CUPTI error " + std::to_string(static_cast<int>(r)));
}

struct State {
  // Recursive: setup may re-enter on the same thread (NVTX init -> CUPTI -> cuInit ->
  // InitializeInjection); the re-entrant call sees `initialised` and returns at once.
  std::recursive_mutex init_mutex;
  bool initialised = false;
  std::atomic<bool> recording{false};
  std::atomic<bool> stopped{false};
  pid_t pid = 0;
  CUpti_SubscriberHandle subscriber = nullptr;
  std::vector<CUpti_ActivityKind> enabled;
  std::mutex kinds_mutex;          // enabled, capturing: the job's thread (set_capture) vs the exit / writer
  bool capturing = false;          // the trace kinds are on (record --steps: only inside the window)
  std::int64_t first_captured_step = 0;
  // Launch records (kernel -> launching thread and time, hence -> module). Per API function
  // (kRuntimeApis / kDriverApis) where CUPTI delivers them; through the whole RUNTIME / DRIVER kinds
  // (every API call a record) when asked (SHARDSCOPE_LAUNCH_RECORDS=kinds) or as the fallback of a
  // window whose per-API records do not arrive (check_launch_records).
  bool api_kinds = false;
  bool launch_fallback = false;         // api_kinds turned on by check_launch_records
  std::atomic<bool> launch_check{false};  // a window from A > 0 opened with per-API records: see that they arrive
  std::string trace_kinds = "all";  // SHARDSCOPE_TRACE_KINDS (measurement only)
  std::atomic<std::int64_t> capture_switches{0};
  // Detaching CUPTI once a capture window has closed (detach_after_window). The job's thread asks
  // (set_capture), the writer thread drains what CUPTI flushed and arms the API callback, and the
  // callback calls cuptiFinalize at the next CUDA API exit (CUPTI's documented detach site).
  bool detach_after_window = true;         // SHARDSCOPE_CUPTI_DETACH != "0"
  std::atomic<bool> detach_requested{false};  // window closed, everything flushed into the queue
  std::atomic<bool> detach_armed{false};      // buffers drained: no CUPTI call from the writer from here on
  std::atomic<bool> finalize_ready{false};    // callback domains enabled: the next API exit may finalize
  std::atomic<bool> detached{false};          // cuptiFinalize called
  std::atomic<int> nvtx_slots_released{0};     // NVTX slots set to "no tool" just before it
  std::int64_t dropped_before_detach = 0;     // CUPTI's dropped count, read while it was still attached
  BufferQueue queue;
  std::thread writer_thread;
  std::unique_ptr<RankFileWriter> writer;  // owned by the writer thread once it runs
  std::unique_ptr<Attributor> attributor;
  std::atomic<std::int64_t> buffers_allocated{0};
  std::unordered_map<std::uint64_t, std::string> api_names;  // (driver, cbid) -> name; the writer thread's
};

State& state() {
  static auto* s = new State();  // never destroyed: CUPTI may call back during static teardown
  return *s;
}

// Functions switched on before CUDA's context exists, so that launch records switched on per API
// later, at a window from A > 0, are delivered: CUPTI records a function switched on after the
// context only if something of its kind was on when the context was made (on the H200 of the
// fourth loan none of a 12:16 window's 10,924 kernels had a launch record; the same rule is
// documented for an RTX 3060 under CUDA 13.0). The job does not call these two unless it drives a
// profiler itself (cudaProfilerStart), so outside the window they record nothing.
constexpr CUpti_CallbackId kSeedRuntimeApi = CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000;
constexpr CUpti_CallbackId kSeedDriverApi = CUPTI_DRIVER_TRACE_CBID_cuProfilerStart;

bool is_seed(const ApiRecord& r) { return r.cbid == (r.driver ? kSeedDriverApi : kSeedRuntimeApi); }

// The API function's name as the launches table stores it ("cudaLaunchKernel", as in Kineto's
// traces: CUPTI's version suffix "_v7000" dropped). Asked of CUPTI once per function, by the
// writer thread while it decodes, i.e. before any detach (after it the collector calls no CUPTI).
std::string_view api_name(State& s, const ApiRecord& r) {
  const std::uint64_t key = (std::uint64_t(r.driver) << 32) | r.cbid;
  if (auto it = s.api_names.find(key); it != s.api_names.end()) return it->second;
  const char* name = nullptr;
  std::string n;
  if (cuptiGetCallbackName(r.driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, r.cbid, &name) ==
          CUPTI_SUCCESS &&
      name) {
    n = name;
    const auto v = n.rfind("_v");
    if (v != std::string::npos && v + 2 < n.size() &&
        n.find_first_not_of("0123456789", v + 2) == std::string::npos)
      n.resize(v);
  }
  return s.api_names.emplace(key, std::move(n)).first->second;
}

// Kernels a window must have delivered without a single launch record before the writer gives up
// on the per-API records (a step of the kit's job has ~2,700; a small job's first second fewer).
constexpr std::int64_t kLaunchCheckKernels = 200;

// Counts what the writer thread sees, for the rank file's meta and skipped_events.
struct Tally : RecordVisitor {
  Attributor* attributor = nullptr;
  RankFileWriter* writer = nullptr;
  std::int64_t invalid_timestamps = 0;
  std::int64_t pool_events = 0;
  std::map<int, std::pair<std::int64_t, TimeNs>> overhead;  // kind -> (count, total ns)
  std::int64_t kernels = 0;
  std::int64_t launch_records = 0;  // API records other than the seed functions' (seed_per_api_records)

  void on_api(const ApiRecord& r) override {
    if (!is_seed(r)) ++launch_records;
    ApiRecord named = r;
    named.name = api_name(state(), r);
    attributor->add(named);
  }
  void on_kernel(KernelRecord&& r) override {
    ++kernels;
    attributor->add(std::move(r));
  }
  void on_copy(const CopyRecord& r) override { attributor->add(r); }
  void on_marker(MarkerRecord&& r) override { attributor->add(r); }
  void on_marker_payload(MarkerPayload&& p) override { attributor->add(std::move(p)); }
  void on_memory(const MemoryRecord& r) override { attributor->add(r); }
  void on_memory_pool(const MemoryPoolRecord&) override { ++pool_events; }
  void on_overhead(const OverheadRecord& r) override {
    auto& o = overhead[r.kind];
    ++o.first;
    o.second += r.end - r.start;
  }
  void on_device(const DeviceRecord& d) override { writer->add_device(d); }
};

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
  if (*buffer) ++state().buffers_allocated;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  if (buffer) state().queue.push({buffer, valid});  // freed by the writer thread or stop_collector
}

// Enabled only once a detach is armed (the writer thread, arm_detach): at the exit of the next
// CUDA runtime or driver API call, CUPTI is finalized. Until then no callback domain is enabled,
// so CUDA calls pay nothing for it.
void CUPTIAPI api_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId, const void* data) {
  State& s = state();
  if (!s.finalize_ready.load(std::memory_order_acquire)) return;
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  if (static_cast<const CUpti_CallbackData*>(data)->callbackSite != CUPTI_API_EXIT) return;
  if (s.detached.exchange(true)) return;  // another thread (or finalize's own CUDA calls) got here first
  // NVTX first: from here on no range or mark of the job's enters CUPTI (nvtx_release.h).
  s.nvtx_slots_released = release_nvtx_tables();
  const CUptiResult r = cuptiFinalize();
  if (r != CUPTI_SUCCESS) log_once("detach", "cuptiFinalize failed: " + cupti_error(r) + "; CUPTI stays attached");
  else log_verbose("CUPTI detached after the capture window");
}

// Every enabled activity kind off; kinds_mutex held.
void disable_enabled_kinds(State& s) {
  for (auto k : s.enabled) cuptiActivityDisable(k);
  s.enabled.clear();
}

void disable_all(State& s) {
  // The writer thread (give_up), the exit handler and set_capture may all get here.
  std::lock_guard<std::mutex> lock(s.kinds_mutex);
  if (!s.detach_requested) disable_enabled_kinds(s);  // else they are off already, and CUPTI may be detached
  s.recording = false;
  s.capturing = false;
}

// Turns the collector off after an error in the writer thread; the job goes on.
void give_up(State& s, const std::string& why) {
  log_once("give-up", "collector disabled: " + why + " (the training job continues unprofiled)");
  disable_all(s);
}

void process_buffers(State& s, Tally& tally, const std::vector<ActivityBuffer>& buffers) {
  for (const auto& b : buffers) {
    if (s.writer && !s.detach_armed) {  // after arm_detach only empty buffers arrive, maybe after cuptiFinalize
      CUpti_Activity* record = nullptr;
      while (cuptiActivityGetNextRecord(b.data, b.valid_bytes, &record) == CUPTI_SUCCESS)
        if (decode_activity(record, tally) == DecodeResult::InvalidTimestamps) ++tally.invalid_timestamps;
    }
    std::free(b.data);
  }
}

// The writer thread's half of a detach (detach_requested, set by set_capture at the window's end,
// when everything CUPTI held was flushed into the queue): the last buffers are decoded and the
// dropped count read while CUPTI is still attached, then the API callback is armed. From here on
// the writer never calls CUPTI.
void arm_detach(State& s, Tally& tally) {
  process_buffers(s, tally, s.queue.take(std::chrono::milliseconds(0)));
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS) s.dropped_before_detach = static_cast<std::int64_t>(dropped);
  std::lock_guard<std::mutex> lock(s.kinds_mutex);
  s.detach_armed = true;
  // The job's threads may reach an API exit as soon as the first domain is on; the callback waits
  // for finalize_ready, so that cuptiFinalize never runs between (or during) these two calls. (It
  // did on an H200: the driver domain's call came back CUPTI_ERROR_NOT_INITIALIZED, and the log
  // said CUPTI stayed attached; docs/gpu-runs.md, fourth loan.)
  const CUptiResult r = cuptiEnableDomain(1, s.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
  const CUptiResult d = cuptiEnableDomain(1, s.subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
  if (r != CUPTI_SUCCESS && d != CUPTI_SUCCESS)
    log_once("detach", "cannot arm CUPTI's detach (" + cupti_error(r) + "); it stays attached with its trace off");
  else
    s.finalize_ready.store(true, std::memory_order_release);
}

void check_launch_records(State& s, const Tally& tally);

void write_final_stats(State& s, Tally& tally) {
  const auto& st = s.attributor->stats();
  s.writer->add_skipped("records with zero or inverted timestamps", tally.invalid_timestamps);
  s.writer->add_skipped("kernels without a launch record", st.kernels_without_launch);
  s.writer->add_skipped("nvtx range ends without a start", st.unpaired_marker_ends);
  s.writer->add_skipped("nvtx ranges still open at exit", st.unclosed_ranges);
  s.writer->add_skipped("host (non-device) memory records", st.non_device_memory);
  s.writer->set_meta("collector.memory_pool_events", std::to_string(tally.pool_events));
  s.writer->set_meta("collector.nccl_calls_without_kernel", std::to_string(st.nccl_calls_without_kernel));
  s.writer->set_meta("collector.capture_switches", std::to_string(s.capture_switches.load()));
  if (trace_group_on(s.trace_kinds, "api")) {
    std::lock_guard<std::mutex> lock(s.kinds_mutex);
    s.writer->set_meta("collector.launch_records", s.launch_fallback ? "kinds (fallback: per-API records not delivered)"
                                                   : s.api_kinds     ? "kinds"
                                                                     : "per-api");
  }
  for (const auto& [kind, v] : tally.overhead) {
    s.writer->set_meta("collector.overhead." + std::to_string(kind) + ".count", std::to_string(v.first));
    s.writer->set_meta("collector.overhead." + std::to_string(kind) + ".ns", std::to_string(v.second));
  }
}

void writer_loop() {
  State& s = state();
  Tally tally;
  tally.attributor = s.attributor.get();
  tally.writer = s.writer.get();
  std::int64_t dropped_total = 0;
  auto last_commit = std::chrono::steady_clock::now();
  try {
    while (true) {
      auto buffers = s.queue.take(std::chrono::milliseconds(200));
      process_buffers(s, tally, buffers);
      const bool stopping = s.queue.stopping();
      if (stopping) break;
      if (s.detach_requested && !s.detach_armed) arm_detach(s, tally);
      if (std::chrono::steady_clock::now() - last_commit >= kCommitPeriod) {
        if (!s.detach_requested) {  // once a detach is asked for, CUPTI is not called from here
          // Completed records only; FLUSH_FORCED would cut running kernels short.
          if (s.recording) cuptiActivityFlushAll(0);
          process_buffers(s, tally, s.queue.take(std::chrono::milliseconds(0)));
          check_launch_records(s, tally);
          size_t dropped = 0;
          if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS && dropped > 0) {
            dropped_total += static_cast<std::int64_t>(dropped);
            log_once("dropped", "CUPTI dropped activity records (buffers full); the count is stored in skipped_events");
          }
        }
        s.attributor->drain(realtime_ns(), *s.writer);
        s.writer->set_meta("collector.dropped_records", std::to_string(dropped_total));
        s.writer->commit();
        last_commit = std::chrono::steady_clock::now();
      }
    }
    process_buffers(s, tally, s.queue.take(std::chrono::milliseconds(0)));
    if (s.detach_armed) {  // CUPTI may be gone: its count was read before
      dropped_total += s.dropped_before_detach;
    } else {
      size_t dropped = 0;
      if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS) dropped_total += static_cast<std::int64_t>(dropped);
    }
    s.attributor->drain_all(*s.writer);
    write_final_stats(s, tally);
    s.writer->set_meta("collector.cupti_detached", s.detached ? "1" : "0");
    s.writer->set_meta("collector.nvtx_slots_released", std::to_string(s.nvtx_slots_released.load()));
    s.writer->add_skipped("cupti dropped records", dropped_total);
    s.writer->set_meta("collector.dropped_records", std::to_string(dropped_total));
    s.writer->finish();
  } catch (const std::exception& e) {
    give_up(s, std::string("cannot write the rank file: ") + e.what());
    s.writer.reset();  // from here on buffers are only freed
    // Keep freeing buffers so that CUPTI's memory does not grow while disabled.
    while (!s.queue.stopping()) process_buffers(s, tally, s.queue.take(std::chrono::milliseconds(500)));
    process_buffers(s, tally, s.queue.take(std::chrono::milliseconds(0)));
  }
  s.writer.reset();
}

bool check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return true;
  log_once("init", std::string(what) + " failed: " + cupti_error(r) + "; collector disabled, the job runs on");
  return false;
}

bool enable(State& s, CUpti_ActivityKind kind, const char* name, bool required) {
  CUptiResult r = cuptiActivityEnable(kind);
  if (r == CUPTI_SUCCESS) {
    if (std::find(s.enabled.begin(), s.enabled.end(), kind) == s.enabled.end()) s.enabled.push_back(kind);
    return true;
  }
  if (required) return check(r, name);
  log_once(std::string("kind-") + name, std::string("activity kind ") + name + " unavailable: " + cupti_error(r));
  return true;
}

// What `record --steps A:B` switches: everything that costs the job something per launch, copy or
// range. Kernels first: instrumenting at module load is what makes the first step slow (research
// 2.6). Memory records (MEMORY2, MEMORY_POOL) stay on for the whole run, so that the window's live
// memory includes what was allocated before it.
struct TraceKind {
  CUpti_ActivityKind kind;
  const char* name;
  bool required;
  const char* group;  // its name in SHARDSCOPE_TRACE_KINDS
};
constexpr TraceKind kTraceKinds[] = {
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL", true, "kernel"},
    {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY", true, "memcpy"},
    {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET", true, "memset"},
    {CUPTI_ACTIVITY_KIND_MARKER, "MARKER", true, "marker"},
    {CUPTI_ACTIVITY_KIND_MARKER_DATA, "MARKER_DATA", false, "marker"},
    {CUPTI_ACTIVITY_KIND_OVERHEAD, "OVERHEAD", false, "overhead"},  // CUPTI's own overhead records
};

// Launch / allocation API records only (research 2.3): correlation -> thread and time.
constexpr CUpti_CallbackId kRuntimeApis[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020, CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020};
constexpr CUpti_CallbackId kDriverApis[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync};

// One activity kind off, if it is on; kinds_mutex held.
void disable(State& s, CUpti_ActivityKind kind) {
  if (auto it = std::find(s.enabled.begin(), s.enabled.end(), kind); it != s.enabled.end()) {
    cuptiActivityDisable(kind);
    s.enabled.erase(it);
  }
}

// The whole RUNTIME and DRIVER kinds on or off; kinds_mutex held.
bool switch_api_kinds(State& s, int on) {
  for (auto [kind, name] : {std::pair{CUPTI_ACTIVITY_KIND_RUNTIME, "RUNTIME"}, std::pair{CUPTI_ACTIVITY_KIND_DRIVER, "DRIVER"}}) {
    if (!on) disable(s, kind);
    else if (!enable(s, kind, name, true)) return false;
  }
  return true;
}

// The launch functions' records on or off (kRuntimeApis, kDriverApis); false at the first refusal.
bool switch_per_api_records(int on) {
  for (CUpti_CallbackId cbid : kRuntimeApis)
    if (cuptiActivityEnableRuntimeApi(cbid, on) != CUPTI_SUCCESS) return false;
  for (CUpti_CallbackId cbid : kDriverApis)
    if (cuptiActivityEnableDriverApi(cbid, on) != CUPTI_SUCCESS) return false;
  return true;
}

// Before CUDA's context (setup): the seed functions on, so that per-API launch records switched
// on by a window from A > 0 are delivered (kSeedRuntimeApi). Where CUPTI refuses, the window takes
// the whole kinds instead.
void seed_per_api_records(State& s) {
  if (cuptiActivityEnableRuntimeApi(kSeedRuntimeApi, 1) == CUPTI_SUCCESS &&
      cuptiActivityEnableDriverApi(kSeedDriverApi, 1) == CUPTI_SUCCESS)
    return;
  s.api_kinds = true;
  log_verbose("per-API launch records cannot be seeded; the capture window takes the whole RUNTIME / DRIVER kinds");
}

// Turns the trace kinds and API records on or off; kinds_mutex held.
bool switch_trace_kinds(State& s, bool on) {
  for (const auto& k : kTraceKinds) {
    if (on && !trace_group_on(s.trace_kinds, k.group)) continue;
    if (on) {
      if (!enable(s, k.kind, k.name, k.required)) return false;
    } else {
      disable(s, k.kind);
    }
  }
  const int api = on && trace_group_on(s.trace_kinds, "api") ? 1 : 0;
  if (!s.api_kinds && !switch_per_api_records(api) && api) {
    s.api_kinds = true;  // a CUPTI without per-function records: every API call a record instead
    log_once("per-api", "per-API launch records unavailable; launch records through CUPTI's whole RUNTIME and DRIVER kinds");
  }
  if (s.api_kinds && !switch_api_kinds(s, api)) return false;
  s.launch_check = api && s.first_captured_step > 0 && !s.api_kinds;
  s.capturing = on;
  return true;
}

// The writer thread, at each commit inside a window from A > 0 (launch_check): once the window
// has delivered kLaunchCheckKernels kernels and not one launch record, the per-API records are not
// arriving (a CUPTI without the seed's effect): the whole RUNTIME / DRIVER kinds go on for the rest
// of the window, as Kineto takes them mid-run. They cost the job a record per API call: on the
// fifth loan's H200 a 12:16 window's steps ran +49 / +57 % over the steps outside it (fourth loan,
// kernels without launch records: +20 / +23 %), and the steps after it stayed +11 / +16 % slower
// than the unrecorded job's (fourth loan: -4 / +3 %); so they are the fallback, not the rule.
void check_launch_records(State& s, const Tally& tally) {
  if (!s.launch_check) return;
  if (tally.launch_records > 0) {
    s.launch_check = false;
    return;
  }
  if (tally.kernels < kLaunchCheckKernels) return;
  std::lock_guard<std::mutex> lock(s.kinds_mutex);
  s.launch_check = false;
  if (!s.capturing || s.detach_requested || s.api_kinds) return;
  s.api_kinds = true;
  s.launch_fallback = true;
  switch_api_kinds(s, 1);  // a kind CUPTI refuses is logged by enable()
  log_once("launch-fallback", std::to_string(tally.kernels) +
                                  " kernels of the capture window came without a launch record; launch records through "
                                  "CUPTI's whole RUNTIME and DRIVER kinds from now on (the earlier kernels have no module)");
}

// The job's half of a detach, at the capture window's end (kinds_mutex held, the job's GPU work
// synchronised by _collector.py): every activity kind off, memory included (the window's memory is
// complete; what the job allocates after it is not the profile's), everything CUPTI holds flushed.
// Why: a CUPTI that traced kernels once stays in the job's launch path after its kinds are
// disabled; on an H200 the steps after a window ran about 15 % slower than the ones before it
// (docs/gpu-runs.md, third loan; PyTorch saw the same after torch.profiler, pytorch#144455, and
// finalizes CUPTI after profiling since). SHARDSCOPE_CUPTI_DETACH=0 keeps it attached.
void request_detach(State& s) {
  disable_enabled_kinds(s);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  s.detach_requested = true;
}

bool setup(State& s) {
  const char* dir = std::getenv(kEnvOutputDir);
  if (!dir || !*dir) {
    log_once("no-dir", std::string("loaded without ") + kEnvOutputDir + " (not under 'shardscope record'); collector idle");
    return false;
  }
  set_log_verbose(std::getenv(kEnvVerbose) && std::string(std::getenv(kEnvVerbose)) == "1");
  if (started_by_a_rank(process_env(), getpid())) {
    log_verbose(std::string("started by the rank with pid ") + std::getenv(kEnvRankPid) +
                " (a DataLoader worker, a helper); not a rank, nothing recorded here");
    return false;
  }
  const std::string memory = std::getenv(kEnvMemoryMode) ? std::getenv(kEnvMemoryMode) : "per-tensor";

  CUpti_SubscriberParams params{};
  char other[256] = {0};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "shardscope";
  params.oldSubscriberName = other;
  params.oldSubscriberSize = sizeof other;
  CUptiResult r = cuptiSubscribe_v2(&s.subscriber, api_callback, nullptr, &params);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    log_once("subscriber", std::string("another profiler already holds CUPTI (") + (other[0] ? other : "unknown tool") +
                               "); shardscope records nothing in this process, the job runs on");
    return false;
  }
  if (r != CUPTI_SUCCESS) {
    // No driver, no GPU, a driver older than CUPTI 13 needs (r580): CUPTI says little more than this.
    log_once("nodriver", "cannot start CUPTI (" + cupti_error(r) +
                             "; no usable CUDA driver or GPU?); shardscope records nothing in this process, the job runs on");
    return false;
  }
  if (!check(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM), "cuptiSetThreadIdType")) return false;
  if (!check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks"))
    return false;

  const RankIdentity id = rank_identity_from_env(process_env(), getpid());
  const std::string path = std::string(dir) + "/" + rank_file_stem(id) + std::string(kRankFileSuffix);
  RankInfo info;
  info.rank = std::max(id.rank, 0);
  info.pid = id.pid;
  info.world_size = id.world_size;
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) == 0) info.host = host;
  try {
    s.writer = std::make_unique<RankFileWriter>(path, info, realtime_ns(), "");
    s.writer->set_meta("collector.memory_mode", memory);
    s.writer->set_meta("collector.cupti_api_version", std::to_string(CUPTI_API_VERSION));
    s.writer->commit();
  } catch (const std::exception& e) {
    log_once("open", std::string("cannot create ") + path + ": " + e.what() + "; collector disabled");
    cuptiUnsubscribe(s.subscriber);
    return false;
  }
  s.attributor = std::make_unique<Attributor>();

  // Under `record --steps A:B` with A > 0 the trace kinds wait for the job's Python side to open the
  // window (shardscope_collector_capture, _collector.py); until then the job runs untraced.
  s.first_captured_step = first_captured_step(std::getenv(kEnvSteps));
  const char* launch = std::getenv(kEnvLaunchRecords);
  s.api_kinds = s.first_captured_step > 0 && launch && std::string(launch) == "kinds";
  if (const char* kinds = std::getenv(kEnvTraceKinds); kinds && *kinds) {
    s.trace_kinds = kinds;
    s.writer->set_meta("collector.trace_kinds", kinds);
    log_once("trace-kinds", std::string("trace kinds limited to '") + kinds + "' (" + kEnvTraceKinds + ")");
  }
  if (const char* steps = std::getenv(kEnvSteps)) s.writer->set_meta("collector.capture_window", steps);
  if (const char* detach = std::getenv(kEnvCuptiDetach); detach && std::string(detach) == "0") s.detach_after_window = false;
  bool ok = true;
  {
    std::lock_guard<std::mutex> lock(s.kinds_mutex);
    if (s.first_captured_step == 0) ok = switch_trace_kinds(s, true);
    else if (!s.api_kinds && trace_group_on(s.trace_kinds, "api")) seed_per_api_records(s);
    if (ok) ok = enable(s, CUPTI_ACTIVITY_KIND_DEVICE, "DEVICE", false);
    if (ok && memory != "off")
      ok = enable(s, CUPTI_ACTIVITY_KIND_MEMORY2, "MEMORY2", false) && enable(s, CUPTI_ACTIVITY_KIND_MEMORY_POOL, "MEMORY_POOL", false);
  }
  if (!ok) {
    disable_all(s);
    s.writer.reset();
    cuptiUnsubscribe(s.subscriber);
    return false;
  }
  s.recording = true;
  s.writer_thread = std::thread(writer_loop);
  std::atexit(stop_collector);
  log_verbose("recording to " + path);
  return true;
}

}  // namespace

bool start_collector() {
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.init_mutex);
  if (s.initialised) return s.recording;
  s.initialised = true;
  s.pid = getpid();
  try {
    return setup(s);
  } catch (const std::exception& e) {
    log_once("init-exc", std::string("collector setup failed: ") + e.what() + "; the job runs on");
    return false;
  }
}

bool set_capture(bool on) {
  State& s = state();
  if (!s.recording || s.pid != getpid()) return false;
  {
    std::lock_guard<std::mutex> lock(s.kinds_mutex);
    if (s.capturing == on) return true;
    if (s.detach_requested) return false;  // the window closed and CUPTI is (being) detached
    if (!switch_trace_kinds(s, on)) {
      log_once("capture-switch", std::string("cannot switch the trace ") + (on ? "on" : "off") + " at the capture window");
      return false;
    }
    if (!on && s.detach_after_window) request_detach(s);
  }
  ++s.capture_switches;
  log_verbose(std::string("trace ") + (on ? "on" : "off") + " (capture window)");
  return true;
}

void stop_collector() {
  State& s = state();
  if (s.pid != getpid()) return;  // a forked child (DataLoader worker): nothing of ours runs here
  if (s.stopped.exchange(true)) return;
  if (s.recording && !s.detach_requested) {  // after a detach request all is off and flushed already
    disable_all(s);
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  }
  s.queue.stop();
  if (s.writer_thread.joinable()) s.writer_thread.join();
  for (auto& b : s.queue.take(std::chrono::milliseconds(0))) std::free(b.data);
}

}  // namespace ss::collector
