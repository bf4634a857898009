// The critical path of each step: the chain of work that sets the step's end, walked backwards
// from the last kernel of the rank that finishes the step last, across streams, host launches and
// ranks (through collectives), so that every nanosecond of the step is assigned to exactly one
// cause. At a kernel K (on rank r, starting at s), what K waited for is the latest of:
//   * the previous kernel on K's stream (stream order),
//   * K's launch call on the host (the `launches` table), and
//   * the latest kernel of rank r on another stream that ended by s (an event dependency);
// the path goes on through whichever finished last (ties: stream order, then launch). A launch-
// bound kernel puts [launch start, s] on the path as `launch` and the time back to the latest
// kernel the rank finished before the launch as `host` (the CPU was the bottleneck). Gaps left by
// stream or event dependencies are `idle`. A collective whose peers joined late (matched across
// ranks by process group and sequence number) jumps to the rank that started it last: the part
// of the collective after that rank arrived is `communication`; the earlier part was spent
// waiting for that rank, whose own work is then on the path (reported as `peer wait`).
//
// The all-gathers on the path are then ranked by how much of their time is on it, per FSDP unit:
// the evidence for which units to keep unsharded (an unsharded unit needs no all-gather).
#include <algorithm>
#include <cstdio>

#include "plugins/api/plugin_sdk.h"
#include "plugins/builtin/common/critical_path_walk.h"
#include "storage/units.h"

namespace {

using namespace ss::analysis;

constexpr std::size_t kMaxMarkers = 2000;

void run(const ss::plugin::Host& host) {
  ProfileAccess p(host);
  const CriticalPath cp = compute_critical_path(host, p);
  host.table("steps", {"step", "start_ns", "duration_ns", "compute_ns", "communication_ns", "copy_ns", "launch_ns",
                       "host_ns", "idle_ns", "peer_wait_ns", "ranks_on_path"});
  // Without recorded steps the whole window is walked as one: its step number is "—", not -1.
  for (const auto& s : cp.steps)
    host.row({s.step >= 0 ? ss::plugin::Cell(s.step) : ss::plugin::Cell(), s.start, s.end - s.start, s.by_kind[kPathCompute], s.by_kind[kPathCommunication],
              s.by_kind[kPathCopy], s.by_kind[kPathLaunch], s.by_kind[kPathHost], s.by_kind[kPathIdle], s.peer_wait,
              static_cast<std::int64_t>(s.ranks_on_path)});
  host.table("all_gathers_on_path", {"unit", "on_path_ns", "gathers_on_path", "all_gather_ns", "on_path_pct"});
  for (const auto& u : cp.all_gathers)
    host.row({u.unit, u.on_path_ns, u.gathers_on_path, u.all_gather_ns,
              u.all_gather_ns > 0 ? 100.0 * double(u.on_path_ns) / double(u.all_gather_ns) : 0.0});

  host.table("path", {"rank", "start_ns", "end_ns", "duration_ns", "kind", "kernel"});
  std::vector<const PathSegment*> longest;
  for (const auto& s : cp.steps)
    for (const auto& seg : s.segments) longest.push_back(&seg);
  std::sort(longest.begin(), longest.end(), [](const PathSegment* a, const PathSegment* b) {
    return a->end - a->start != b->end - b->start ? a->end - a->start > b->end - b->start : a->start < b->start;
  });
  if (longest.size() > kMaxMarkers) longest.resize(kMaxMarkers);
  for (const PathSegment* seg : longest) {
    host.row({seg->rank, seg->start, seg->end, seg->end - seg->start, path_kind_name(seg->kind), seg->kernel_name});
    host.marker(seg->start, seg->end, seg->rank, std::string("critical: ") + path_kind_name(seg->kind));
  }
  if (!cp.steps.empty() && cp.steps.front().step < 0)
    host.finding(SS_SEVERITY_INFO, "the profile records no training steps: the critical path is that of the whole window");
  if (cp.launch_records != LaunchRecords::Present)
    host.finding(SS_SEVERITY_INFO, std::string(no_launches_message(cp.launch_records)) +
                                       ": host launch time cannot be on the path");
  if (!cp.all_gathers.empty() && cp.all_gathers.front().on_path_ns > 0) {
    host.finding(SS_SEVERITY_WARNING, "the all-gathers of " + cp.all_gathers.front().unit + " are the most exposed: " +
                                          ss::format_duration_ns(cp.all_gathers.front().on_path_ns) + " on the critical path");
  }
}

}  // namespace

SS_DEFINE_PLUGIN("critical-path", "Critical path of each step",
                 "The chain of kernels, launches and cross-rank collectives that sets each step's time, broken "
                 "down into compute, communication, copies, launch and host time and idle; all-gathers ranked by "
                 "their time on the path per FSDP unit.",
                 &run)
