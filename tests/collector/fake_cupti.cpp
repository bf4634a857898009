#include "tests/collector/fake_cupti.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "profiler/collector/cupti/nvtx_release.h"

namespace {

struct Fake {
  std::mutex m;
  fake_cupti::Snapshot s;
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  bool finalized = false;
  bool api_exit_after_domain_enable = false;
  bool context = false;
  bool refuse_per_api = false;
  bool runtime_filter_live = false;  // some runtime function (or the kind) was on when the context was made
  bool driver_filter_live = false;
  std::uint32_t correlation = 0;
  std::vector<std::uint8_t> pending;  // records not yet handed over, back to back
};

// The size of a record the fake writes, from its kind (the first field of every CUPTI record).
std::size_t record_size(const CUpti_Activity* r) {
  return r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? sizeof(CUpti_ActivityKernel10) : sizeof(CUpti_ActivityAPI);
}

template <typename Record>
void append(std::vector<std::uint8_t>& out, const Record& r) {
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(&r);
  out.insert(out.end(), bytes, bytes + sizeof r);
}

Fake& fake() {
  static Fake f;
  return f;
}

// Every CUPTI entry point notes itself; after cuptiFinalize that is a call our collector must not make.
void note(const char* name) {
  Fake& f = fake();
  std::lock_guard<std::mutex> lock(f.m);
  if (f.finalized) {
    ++f.s.calls_after_finalize;
    f.s.last_call_after_finalize = name;
  }
}

// What CUPTI does at a flush or at finalize: hands over a buffer with the records it holds.
void hand_over_a_buffer() {
  Fake& f = fake();
  std::vector<std::uint8_t> records;
  {
    std::lock_guard<std::mutex> lock(f.m);
    records.swap(f.pending);
  }
  if (!f.request || !f.complete) return;
  uint8_t* buffer = nullptr;
  size_t size = 0, max_records = 0;
  f.request(&buffer, &size, &max_records);
  const size_t valid = buffer && records.size() <= size ? records.size() : 0;
  if (valid) std::memcpy(buffer, records.data(), valid);
  f.complete(nullptr, 0, buffer, size, valid);
}

}  // namespace

namespace fake_cupti {

Snapshot snapshot() {
  std::lock_guard<std::mutex> lock(fake().m);
  return fake().s;
}

void api_call(CUpti_ApiCallbackSite site) {
  Fake& f = fake();
  CUpti_CallbackFunc cb = nullptr;
  void* userdata = nullptr;
  {
    std::lock_guard<std::mutex> lock(f.m);
    if (f.finalized || !f.s.domains.count(CUPTI_CB_DOMAIN_RUNTIME_API)) return;
    cb = f.callback;
    userdata = f.userdata;
  }
  CUpti_CallbackData data{};
  data.callbackSite = site;
  data.functionName = "cudaLaunchKernel";
  if (cb) cb(userdata, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &data);
}

void api_exit_after_each_domain_enable() {
  std::lock_guard<std::mutex> lock(fake().m);
  fake().api_exit_after_domain_enable = true;
}

namespace {
void create_context_locked(Fake& f) {
  if (f.context) return;
  f.context = true;
  f.runtime_filter_live = !f.s.runtime_apis.empty() || f.s.kinds.count(CUPTI_ACTIVITY_KIND_RUNTIME);
  f.driver_filter_live = !f.s.driver_apis.empty() || f.s.kinds.count(CUPTI_ACTIVITY_KIND_DRIVER);
}
}  // namespace

void refuse_per_api_records() {
  std::lock_guard<std::mutex> lock(fake().m);
  fake().refuse_per_api = true;
}

void create_context() {
  std::lock_guard<std::mutex> lock(fake().m);
  create_context_locked(fake());
}

void launch_kernels(int n) {
  static const char kName[] = "fake_kernel";
  Fake& f = fake();
  std::lock_guard<std::mutex> lock(f.m);
  if (f.finalized) return;
  create_context_locked(f);
  const bool kernels = f.s.kinds.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) > 0;
  const bool launches = f.s.kinds.count(CUPTI_ACTIVITY_KIND_RUNTIME) > 0 ||
                        (f.runtime_filter_live && f.s.runtime_apis.count(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) > 0);
  for (int i = 0; i < n; ++i) {
    const std::uint32_t correlation = ++f.correlation;
    const std::uint64_t t = 1'000'000'000ull + 1000ull * correlation;
    if (launches) {
      CUpti_ActivityAPI a{};
      a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
      a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
      a.start = t;
      a.end = t + 100;
      a.threadId = 1;
      a.correlationId = correlation;
      append(f.pending, a);
    }
    if (kernels) {
      CUpti_ActivityKernel10 k{};
      k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
      k.start = t + 200;
      k.end = t + 300;
      k.correlationId = correlation;
      k.streamId = 7;
      k.name = kName;
      append(f.pending, k);
    }
  }
}

}  // namespace fake_cupti

extern "C" {

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult, const char** str) {
  *str = "fake CUPTI error";
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char** name) {
  note("cuptiGetCallbackName");
  const bool launch = domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  *name = launch ? "cudaLaunchKernel_v7000" : "fakeApiCall";  // CUPTI's names carry a version suffix
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata,
                                       CUpti_SubscriberParams*) {
  note("cuptiSubscribe_v2");
  std::lock_guard<std::mutex> lock(fake().m);
  fake().callback = callback;
  fake().userdata = userdata;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&fake());
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle) {
  note("cuptiUnsubscribe");
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSetThreadIdType(CUpti_ActivityThreadIdType) {
  note("cuptiSetThreadIdType");
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                    CUpti_BuffersCallbackCompleteFunc complete) {
  note("cuptiActivityRegisterCallbacks");
  std::lock_guard<std::mutex> lock(fake().m);
  fake().request = request;
  fake().complete = complete;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  note("cuptiActivityEnable");
  std::lock_guard<std::mutex> lock(fake().m);
  fake().s.kinds.insert(kind);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  note("cuptiActivityDisable");
  std::lock_guard<std::mutex> lock(fake().m);
  fake().s.kinds.erase(kind);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
  note("cuptiActivityEnableRuntimeApi");
  std::lock_guard<std::mutex> lock(fake().m);
  if (fake().refuse_per_api) return CUPTI_ERROR_NOT_SUPPORTED;
  if (enable) fake().s.runtime_apis.insert(cbid);
  else fake().s.runtime_apis.erase(cbid);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) {
  note("cuptiActivityEnableDriverApi");
  std::lock_guard<std::mutex> lock(fake().m);
  if (fake().refuse_per_api) return CUPTI_ERROR_NOT_SUPPORTED;
  if (enable) fake().s.driver_apis.insert(cbid);
  else fake().s.driver_apis.erase(cbid);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
  note("cuptiActivityFlushAll");
  bool hand_over = flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED;
  {
    std::lock_guard<std::mutex> lock(fake().m);
    if (hand_over) ++fake().s.forced_flushes;
    hand_over = hand_over || !fake().pending.empty();  // completed records at a plain flush
  }
  if (hand_over) hand_over_a_buffer();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  note("cuptiActivityGetNumDroppedRecords");
  *dropped = 0;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  note("cuptiActivityGetNextRecord");
  uint8_t* next = *record ? reinterpret_cast<uint8_t*>(*record) + record_size(*record) : buffer;
  if (!buffer || next >= buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(next);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain) {
  note("cuptiEnableDomain");
  bool job_call = false;
  {
    std::lock_guard<std::mutex> lock(fake().m);
    if (enable) fake().s.domains.insert(domain);
    else fake().s.domains.erase(domain);
    job_call = enable && fake().api_exit_after_domain_enable;
  }
  if (job_call) fake_cupti::api_call(CUPTI_API_EXIT);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiFinalize(void) {
  note("cuptiFinalize");
  hand_over_a_buffer();  // what CUPTI still held
  std::lock_guard<std::mutex> lock(fake().m);
  ++fake().s.finalizes;
  fake().s.nvtx_released_at_finalize = ss::collector::nvtx_released();
  fake().finalized = true;
  fake().s.kinds.clear();
  fake().s.domains.clear();
  return CUPTI_SUCCESS;
}

}  // extern "C"
