// Idle gaps on each rank's compute stream (the stream with the most compute-kernel time) and
// their likely cause. A gap is a stretch of at least kMinGapNs with no kernel on that stream.
//   waiting on a collective: NCCL kernels of the rank run during >= half of the gap;
//   launch-bound host: CPU operator ranges (aten ops / NCCL calls) cover >= half of the gap
//     while the GPU is idle, and the latest CPU op that began before the next kernel began
//     after the gap opened (the host issued the next kernel's work late);
//   waiting on a collective (partial): some NCCL kernel overlaps the gap;
//   other: none of these (host synchronisation, data loading, or no CPU ranges recorded).
#include <algorithm>
#include <array>
#include <climits>
#include <cstdio>
#include <map>

#include "plugins/api/plugin_sdk.h"
#include "plugins/builtin/common/profile_access.h"

namespace {

using namespace ss::analysis;

constexpr std::int64_t kMinGapNs = 5'000;
constexpr unsigned kCpuOps = (1u << SS_RANGE_CPU_OP) | (1u << SS_RANGE_NCCL);
constexpr std::size_t kMaxListed = 500;

struct Gap {
  int rank;
  Interval time;
  const char* cause;
  std::int64_t collective_ns;
  std::int64_t cpu_busy_ns;
};

void run(const ss::plugin::Host& host) {
  ProfileAccess p(host);
  std::vector<Gap> all;
  for (const auto& r : p.ranks) {
    if (r.compute_stream < 0) continue;
    const bool have_cpu = p.has_cpu_ranges(r.rank, kCpuOps);
    for (const Interval& g : gaps(r.compute_stream_busy, r.window.start, r.window.end)) {
      if (g.length() < kMinGapNs) continue;
      const std::int64_t coll = covered_length(r.collective, g);
      const std::int64_t cpu = have_cpu ? p.cpu_busy_length(r.rank, g, kCpuOps) : 0;
      const std::int64_t next_issue = have_cpu ? p.latest_cpu_start(r.rank, g.end, kCpuOps) : INT64_MIN;
      const char* cause = "other";
      if (2 * coll >= g.length())
        cause = "waiting on collective";
      else if (have_cpu && 2 * cpu >= g.length() && next_issue > g.start)
        cause = "launch-bound host";
      else if (coll > 0)
        cause = "waiting on collective";
      all.push_back({r.rank, g, cause, coll, cpu});
    }
  }

  host.table("summary", {"rank", "cause", "gaps", "idle_ns", "longest_ns"});
  std::map<std::pair<int, std::string>, std::array<std::int64_t, 3>> sums;
  for (const auto& g : all) {
    auto& s = sums[{g.rank, g.cause}];
    s[0] += 1;
    s[1] += g.time.length();
    s[2] = std::max(s[2], g.time.length());
  }
  for (const auto& [key, s] : sums) host.row({key.first, key.second, s[0], s[1], s[2]});

  std::vector<const Gap*> longest;
  for (const auto& g : all) longest.push_back(&g);
  std::sort(longest.begin(), longest.end(), [](const Gap* a, const Gap* b) {
    return a->time.length() != b->time.length() ? a->time.length() > b->time.length() : a->time.start < b->time.start;
  });
  if (longest.size() > kMaxListed) longest.resize(kMaxListed);
  host.table("gaps", {"rank", "start_ns", "end_ns", "duration_ns", "cause", "collective_overlap_ns", "cpu_busy_ns"});
  for (const Gap* g : longest)
    host.row({g->rank, g->time.start, g->time.end, g->time.length(), g->cause, g->collective_ns, g->cpu_busy_ns});
  for (std::size_t i = 0; i < longest.size() && i < 5; ++i) {
    const Gap& g = *longest[i];
    char msg[200];
    std::snprintf(msg, sizeof msg, "compute stream idle for %.1f us on rank %d: %s", double(g.time.length()) / 1e3,
                  g.rank, g.cause);
    host.finding(i == 0 ? SS_SEVERITY_WARNING : SS_SEVERITY_INFO, msg, g.time.start, g.time.end, g.rank);
  }
  for (const Gap* g : longest) host.marker(g->time.start, g->time.end, g->rank, std::string("idle: ") + g->cause);
}

}  // namespace

SS_DEFINE_PLUGIN("idle-gaps", "Idle gaps on the compute stream and their likely cause",
                 "Gaps of at least 5 us between kernels on each rank's compute stream, classified as waiting on a "
                 "collective, launch-bound host, or other.",
                 &run)
