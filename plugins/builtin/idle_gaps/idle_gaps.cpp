// Idle gaps on every stream of each rank, and their cause. A gap is a stretch of at least
// kMinGapNs with no kernel on the stream inside the window; the gap's "next kernel" is the first
// kernel on the stream after it.
//
// With the next kernel's launch call recorded (the profile's `launches` table, from the
// correlation ids of Kineto and Nsight Systems traces), the cause is a fact, not a guess:
//   launch-bound host:        the launch call began at or after the gap opened, so the stream had
//                             nothing queued: the GPU waited on the host;
//   waiting on collective:    the kernel was already queued (launched before the gap opened) and
//                             NCCL kernels of the rank ran during >= half of the gap;
//   waiting on another stream: queued, and other kernels of the rank (compute or copies on other
//                             streams) ran during >= half of the gap (an event dependency);
//   waiting on dependency:    queued, and nothing ran (a host sync, an event from an idle stream).
// Without a launch record, the heuristics of earlier versions apply (evidence "heuristic"):
//   waiting on collective: NCCL kernels of the rank run during >= half of the gap;
//   launch-bound host: CPU operator ranges cover >= half of the gap and the latest CPU op that
//     began before the next kernel began after the gap opened;
//   waiting on collective (partial): some NCCL kernel overlaps the gap; other: none of these.
//
// Tables: `summary` and `gaps` for each rank's compute stream (the stream with the most compute
// time: the one whose idleness costs step time), `per_stream` for every stream.
#include <algorithm>
#include <array>
#include <climits>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "plugins/api/plugin_sdk.h"
#include "plugins/builtin/common/launch_records.h"
#include "plugins/builtin/common/profile_access.h"
#include "storage/units.h"

namespace {

using namespace ss::analysis;

constexpr std::int64_t kMinGapNs = 5'000;
constexpr unsigned kCpuOps = (1u << SS_RANGE_CPU_OP) | (1u << SS_RANGE_NCCL);
constexpr std::size_t kMaxListed = 500;
constexpr std::int64_t kNoLaunch = INT64_MIN;

struct Gap {
  int rank;
  std::int64_t stream;  // native id
  std::uint8_t stream_kind;
  bool compute_stream;
  Interval time;
  const char* cause;
  const char* evidence;  // "launch" or "heuristic"
  std::int64_t next_launch;  // launch call start of the next kernel, kNoLaunch when unknown
  std::int64_t collective_ns;
  std::int64_t other_streams_ns;
  std::int64_t cpu_busy_ns;
};

const char* stream_kind_name(std::uint8_t k) {
  switch (k) {
    case SS_STREAM_COMPUTE: return "compute";
    case SS_STREAM_NCCL: return "nccl";
    case SS_STREAM_COPY: return "copy";
    default: return "unknown";
  }
}

// Busy intervals of one stream's kernels inside [lo, hi) and, for each, the id of the kernel that
// opens it (the earliest-starting kernel of the merged run).
struct StreamRuns {
  IntervalSet busy;
  std::vector<std::uint32_t> opener;
};

StreamRuns stream_runs(const ss_stream_info& s, std::int64_t lo, std::int64_t hi) {
  StreamRuns out;
  for (std::size_t i = 0; i < s.count; ++i) {
    const auto& k = s.events[i];
    const std::int64_t a = std::max(k.start, lo), b = std::min(k.end, hi);
    if (b <= a) continue;
    if (!out.busy.empty() && a <= out.busy.back().end) {
      out.busy.back().end = std::max(out.busy.back().end, b);
    } else {
      out.busy.push_back({a, b});
      out.opener.push_back(k.id);
    }
  }
  return out;
}

void run(const ss::plugin::Host& host) {
  ProfileAccess p(host);
  const LaunchRecords records = launch_records(host);
  const auto launches = launch_calls(host, records);
  std::vector<Gap> all;
  for (const auto& r : p.ranks) {
    const bool have_cpu = p.has_cpu_ranges(r.rank, kCpuOps);
    for (std::size_t si = 0; si < p.streams.size(); ++si) {
      const ss_stream_info& s = p.streams[si];
      if (s.rank != r.rank || s.count == 0) continue;
      const bool compute_stream = static_cast<int>(si) == r.compute_stream;
      const StreamRuns runs = stream_runs(s, r.window.start, r.window.end);
      if (runs.busy.empty()) continue;
      const IntervalSet own = runs.busy;
      // The rank's other activity: kernels on the other streams.
      IntervalSet others;
      {
        std::vector<Interval> v;
        for (const auto& o : p.streams)
          if (o.rank == r.rank && &o != &s)
            for (std::size_t i = 0; i < o.count; ++i) v.push_back({o.events[i].start, o.events[i].end});
        others = merge(std::move(v));
      }
      // Gaps between consecutive runs, and the gap before the first run (from the window's start).
      std::int64_t prev_end = r.window.start;
      for (std::size_t ri = 0; ri < own.size(); ++ri) {
        const Interval g{prev_end, own[ri].start};
        prev_end = own[ri].end;
        if (g.length() < kMinGapNs) continue;
        const std::int64_t coll = covered_length(r.collective, g);
        const std::int64_t other = covered_length(others, g);
        const std::int64_t cpu = have_cpu ? p.cpu_busy_length(r.rank, g, kCpuOps) : 0;
        std::int64_t next_launch = kNoLaunch;
        if (auto it = launches.find(runs.opener[ri]); it != launches.end()) next_launch = it->second.start;
        const char* cause = "other";
        const char* evidence = "launch";
        if (next_launch != kNoLaunch) {
          if (next_launch >= g.start) cause = "launch-bound host";
          else if (2 * coll >= g.length()) cause = "waiting on collective";
          else if (2 * other >= g.length()) cause = "waiting on another stream";
          else cause = "waiting on dependency";
        } else {
          evidence = "heuristic";
          const std::int64_t next_issue = have_cpu ? p.latest_cpu_start(r.rank, g.end, kCpuOps) : INT64_MIN;
          if (2 * coll >= g.length()) cause = "waiting on collective";
          else if (have_cpu && 2 * cpu >= g.length() && next_issue > g.start) cause = "launch-bound host";
          else if (coll > 0) cause = "waiting on collective";
        }
        all.push_back({r.rank, s.native_id, s.kind, compute_stream, g, cause, evidence, next_launch, coll, other, cpu});
      }
      // Idle after the last run to the window's end: no next kernel, so no cause from launches.
      const Interval tail{prev_end, r.window.end};
      if (tail.length() >= kMinGapNs) {
        const std::int64_t coll = covered_length(r.collective, tail);
        const std::int64_t other = covered_length(others, tail);
        const std::int64_t cpu = have_cpu ? p.cpu_busy_length(r.rank, tail, kCpuOps) : 0;
        const char* cause = 2 * coll >= tail.length() || coll > 0 ? "waiting on collective" : "other";
        all.push_back({r.rank, s.native_id, s.kind, compute_stream, tail, cause, "heuristic", kNoLaunch, coll, other, cpu});
      }
    }
  }

  // Compute streams: the summary and gap list of earlier versions (plus the evidence).
  host.table("summary", {"rank", "cause", "gaps", "idle_ns", "longest_ns"});
  std::map<std::pair<int, std::string>, std::array<std::int64_t, 3>> sums;
  for (const auto& g : all) {
    if (!g.compute_stream) continue;
    auto& s = sums[{g.rank, g.cause}];
    s[0] += 1;
    s[1] += g.time.length();
    s[2] = std::max(s[2], g.time.length());
  }
  for (const auto& [key, s] : sums) host.row({key.first, key.second, s[0], s[1], s[2]});

  std::vector<const Gap*> longest;
  for (const auto& g : all)
    if (g.compute_stream) longest.push_back(&g);
  std::sort(longest.begin(), longest.end(), [](const Gap* a, const Gap* b) {
    return a->time.length() != b->time.length() ? a->time.length() > b->time.length() : a->time.start < b->time.start;
  });
  if (longest.size() > kMaxListed) longest.resize(kMaxListed);
  host.table("gaps", {"rank", "stream", "start_ns", "end_ns", "duration_ns", "cause", "evidence", "next_launch_time_ns",
                      "collective_overlap_ns", "cpu_busy_ns"});
  for (const Gap* g : longest)
    host.row({g->rank, g->stream, g->time.start, g->time.end, g->time.length(), g->cause, g->evidence,
              g->next_launch == kNoLaunch ? ss::plugin::Cell() : ss::plugin::Cell(g->next_launch), g->collective_ns,
              g->cpu_busy_ns});

  // Every stream.
  host.table("per_stream", {"rank", "stream", "kind", "cause", "evidence", "gaps", "idle_ns", "longest_ns"});
  std::map<std::tuple<int, std::int64_t, std::string, std::string, std::string>, std::array<std::int64_t, 3>> per;
  for (const auto& g : all) {
    auto& s = per[{g.rank, g.stream, stream_kind_name(g.stream_kind), g.cause, g.evidence}];
    s[0] += 1;
    s[1] += g.time.length();
    s[2] = std::max(s[2], g.time.length());
  }
  for (const auto& [key, s] : per)
    host.row({std::get<0>(key), std::get<1>(key), std::get<2>(key), std::get<3>(key), std::get<4>(key), s[0], s[1], s[2]});

  for (std::size_t i = 0; i < longest.size() && i < 5; ++i) {
    const Gap& g = *longest[i];
    char msg[240];
    std::snprintf(msg, sizeof msg, "compute stream idle for %s on rank %d: %s (%s)", ss::format_duration_ns(g.time.length()).c_str(),
                  g.rank, g.cause, g.evidence);
    host.finding(i == 0 ? SS_SEVERITY_WARNING : SS_SEVERITY_INFO, msg, g.time.start, g.time.end, g.rank);
  }
  if (records != LaunchRecords::Present)
    host.finding(SS_SEVERITY_INFO, std::string(no_launches_message(records)) + ": causes are heuristic");
  for (const Gap* g : longest) host.marker(g->time.start, g->time.end, g->rank, std::string("idle: ") + g->cause);
}

}  // namespace

SS_DEFINE_PLUGIN("idle-gaps", "Idle gaps on every stream and their cause",
                 "Gaps of at least 5 us between kernels on each stream, classified from the next kernel's launch "
                 "call where the profile has it (launch-bound host, waiting on a collective, on another stream, or on "
                 "a dependency), else by heuristics.",
                 &run)
