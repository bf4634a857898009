// Times opening an existing profile into the in-memory model (load_profile), as the app's loader
// thread does, and the process's peak RSS:
//   build/bench/storage/bench_load FILE [--runs N]
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "storage/profile_reader.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE [--runs N]\n", argv[0]);
    return 2;
  }
  int runs = 3;
  for (int i = 2; i < argc; ++i)
    if (!std::strcmp(argv[i], "--runs") && i + 1 < argc) runs = std::atoi(argv[++i]);
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    ss::LoadOptions options;
    std::string stage;
    // When each stage first reports (a stage reports after its first 64 Ki rows, or when done).
    options.progress = [&](double, const char* s) {
      if (stage == s) return;
      stage = s;
      if (r == 0)
        std::printf("  %.3f s: %s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), s);
    };
    const ss::Profile p = ss::load_profile(argv[1], options);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, s);
    std::printf("run %d: %.3f s (%lld kernels, %lld ranges, %lld memory events)\n", r + 1, s,
                static_cast<long long>(p.kernel_count), static_cast<long long>(p.range_count),
                static_cast<long long>(p.memory_event_count));
  }
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  std::printf("best %.3f s; peak RSS %.1f MB\n", best, static_cast<double>(u.ru_maxrss) / 1024.0);
  return 0;
}
