// Temporal breakdown per rank: how the GPU's time inside the window splits into compute,
// communication not hidden under compute, copies, and idle. Kernel intervals of every stream of
// a rank are merged first, so concurrent kernels are not double counted:
//   compute        = |union of compute kernels|
//   communication  = |union of NCCL kernels  minus compute|
//   copy           = |union of memcpy/memset minus compute and NCCL|
//   idle           = window - |union of all kernels|
// The four add up to the window: the selection, or the rank's first kernel start .. last end.
#include <algorithm>
#include <cstdio>

#include "plugins/api/plugin_sdk.h"
#include "plugins/builtin/common/profile_access.h"
#include "plugins/builtin/common/rank_steps.h"

namespace {

using namespace ss::analysis;

double pct(std::int64_t part, std::int64_t whole) { return whole > 0 ? 100.0 * double(part) / double(whole) : 0.0; }

void run(const ss::plugin::Host& host) {
  ProfileAccess p(host);
  host.table("breakdown", {"rank", "window_ns", "compute_ns", "communication_ns", "copy_ns", "idle_ns",
                           "overlapped_communication_ns", "compute_pct", "communication_pct", "copy_pct", "idle_pct"});
  int worst_rank = -1;
  double worst_idle = -1;
  const RankSteps steps(host);
  int most_outside_rank = -1;
  std::int64_t most_outside = 0;
  for (const auto& r : p.ranks) {
    const std::int64_t window = r.window.length();
    const std::int64_t compute = total_length(r.compute);
    const std::int64_t comm = total_length(subtract(r.collective, r.compute));
    const std::int64_t copy = total_length(subtract(subtract(r.copy, r.compute), r.collective));
    const std::int64_t busy = total_length(clip(r.busy, r.window.start, r.window.end));
    const std::int64_t idle = window - busy;
    const std::int64_t overlapped = total_length(intersect(r.collective, r.compute));
    host.row({r.rank, window, compute, comm, copy, idle, overlapped, pct(compute, window), pct(comm, window),
              pct(copy, window), pct(idle, window)});
    if (pct(idle, window) > worst_idle) worst_idle = pct(idle, window), worst_rank = r.rank;
    if (steps.has_steps(r.rank)) {
      const std::int64_t outside = window - steps.length_inside(r.rank, r.window);
      if (outside > most_outside) most_outside = outside, most_outside_rank = r.rank;
    }

    // Compute utilisation over time, in 100 bins across the window, as an extra counter track.
    constexpr int kBins = 100;
    if (window >= kBins) {
      host.counter_track("compute utilisation", r.rank, "%");
      // window * b / kBins without the product: a window may span up to 2^62 ns (value_bounds.h).
      const auto edge = [&](int b) { return r.window.start + window / kBins * b + window % kBins * b / kBins; };
      for (int b = 0; b < kBins; ++b) {
        Interval bin{edge(b), edge(b + 1)};
        host.counter_point(bin.start, pct(covered_length(r.compute, bin), bin.length()));
      }
    }
  }
  if (worst_rank >= 0) {
    char msg[200];
    std::snprintf(msg, sizeof msg, "rank %d has the most GPU idle time: %.1f%% of its window", worst_rank, worst_idle);
    const auto* r = p.rank(worst_rank);
    host.finding(worst_idle > 20 ? SS_SEVERITY_WARNING : SS_SEVERITY_INFO, msg, r->window.start, r->window.end,
                 worst_rank);
  }
  // A recording's time line holds what ran before its first step (torchtitan's initialisation:
  // half of its window, nearly all idle) and between steps; say so when it is a fair part.
  if (most_outside_rank >= 0) {
    const auto* r = p.rank(most_outside_rank);
    const double share = pct(most_outside, r->window.length());
    if (share >= 10) {
      char msg[300];
      std::snprintf(msg, sizeof msg,
                    "%.1f%% of rank %d's window is outside every recorded step (before the first, between or after "
                    "the last: initialisation, evaluation, checkpointing); `analyze --steps A:B` or a selection on "
                    "the timeline narrows the window to steps",
                    share, most_outside_rank);
      host.finding(SS_SEVERITY_INFO, msg, r->window.start, r->window.end, most_outside_rank);
    }
  }
}

}  // namespace

SS_DEFINE_PLUGIN("temporal", "Temporal breakdown per rank",
                 "Splits each rank's GPU time into compute, exposed communication, copies and idle "
                 "(kernel intervals merged per rank).",
                 &run)
