#include "tests/collector/fake_cupti.h"

#include <cstdlib>
#include <mutex>

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
};

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

// What CUPTI does at a flush or at finalize: hands over a buffer it holds (empty here: no records).
void hand_over_a_buffer() {
  Fake& f = fake();
  if (!f.request || !f.complete) return;
  uint8_t* buffer = nullptr;
  size_t size = 0, max_records = 0;
  f.request(&buffer, &size, &max_records);
  f.complete(nullptr, 0, buffer, size, 0);
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

}  // namespace fake_cupti

extern "C" {

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult, const char** str) {
  *str = "fake CUPTI error";
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

CUptiResult CUPTIAPI cuptiActivityEnableRuntimeApi(CUpti_CallbackId, uint8_t) {
  note("cuptiActivityEnableRuntimeApi");
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnableDriverApi(CUpti_CallbackId, uint8_t) {
  note("cuptiActivityEnableDriverApi");
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
  note("cuptiActivityFlushAll");
  if (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) {
    {
      std::lock_guard<std::mutex> lock(fake().m);
      ++fake().s.forced_flushes;
    }
    hand_over_a_buffer();
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  note("cuptiActivityGetNumDroppedRecords");
  *dropped = 0;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t*, size_t, CUpti_Activity**) {
  note("cuptiActivityGetNextRecord");
  return CUPTI_ERROR_MAX_LIMIT_REACHED;
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
