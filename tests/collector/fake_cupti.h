// A stand-in for libcupti, linked into a test build of profiler/collector/cupti/collector.cpp, so
// that the collector's life cycle (window switches, CUPTI's detach) runs on a machine without a
// GPU. It keeps what CUPTI would: the enabled activity kinds and callback domains, the subscriber's
// callback, the buffer callbacks; it counts every call and every call made after cuptiFinalize
// (which real CUPTI would answer by attaching itself again). Records: none (empty buffers).
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
};

Snapshot snapshot();
// The job's thread at the exit (or entry) of a CUDA runtime API call: the subscriber's callback
// runs when the runtime domain is enabled, as CUPTI would call it.
void api_call(CUpti_ApiCallbackSite site);
// From now on the job's thread makes a CUDA call (its exit) right after each callback domain is
// enabled, before the collector's next CUPTI call: the race of a busy job with the detach's arming.
void api_exit_after_each_domain_enable();

}  // namespace fake_cupti
