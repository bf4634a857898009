// A stand-in for libcupti, linked into a test build of profiler/collector/cupti/collector.cpp, so
// that the collector's life cycle (window switches, CUPTI's detach) runs on a machine without a
// GPU. It keeps what CUPTI would: the enabled activity kinds and callback domains, the subscriber's
// callback, the buffer callbacks; it counts every call and every call made after cuptiFinalize
// (which real CUPTI would answer by attaching itself again). Records: kernels and their launch
// records, for launches the test makes (launch_kernels), as CUPTI would deliver them at a flush.
//
// Launch records per API function follow what NVIDIA's CUPTI does (seen on an H200 under CUDA 13.0
// and documented for an RTX 3060): a function switched on before the CUDA context exists is
// recorded; one switched on after it is recorded only if some function of its kind (runtime,
// driver) was on, or the kind itself, when the context was made. The whole kind records every call.
#pragma once

#include <cupti.h>

#include <set>
#include <string>

namespace fake_cupti {

struct Snapshot {
  std::set<int> kinds;    // enabled activity kinds
  std::set<int> domains;  // enabled callback domains
  int forced_flushes = 0;
  int finalizes = 0;
  int calls_after_finalize = 0;  // CUPTI calls (other than cuptiGetResultString) after finalize
  bool nvtx_released_at_finalize = false;  // the collector had taken CUPTI out of NVTX's tables by then
  std::string last_call_after_finalize;
  std::set<int> runtime_apis;  // functions whose records are switched on (cuptiActivityEnableRuntimeApi)
  std::set<int> driver_apis;
};

Snapshot snapshot();
// The job's thread at the exit (or entry) of a CUDA runtime API call: the subscriber's callback
// runs when the runtime domain is enabled, as CUPTI would call it.
void api_call(CUpti_ApiCallbackSite site);
// From now on the job's thread makes a CUDA call (its exit) right after each callback domain is
// enabled, before the collector's next CUPTI call: the race of a busy job with the detach's arming.
void api_exit_after_each_domain_enable();
// The job's first CUDA call makes the context (launch_kernels makes it if the test has not).
void create_context();
// From now on cuptiActivityEnableRuntimeApi / ...DriverApi answer CUPTI_ERROR_NOT_SUPPORTED (as a
// CUPTI without per-function records would).
void refuse_per_api_records();
// The job launches `n` kernels through cudaLaunchKernel: a kernel record each while the kernel kind
// is on, and a launch (runtime API) record each where the rule above records one; delivered at the
// collector's next flush.
void launch_kernels(int n);

}  // namespace fake_cupti
