// CPU seconds the calling thread has used: what the import's benchmarks and phase split report,
// so that other processes on the machine do not inflate the figures as wall time would.
#pragma once

#include <time.h>

namespace ss {

inline double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace ss
