// Kernel launch statistics from the profile's host launch calls (the optional `launches` table),
// per rank and stream (docs/analyses.md, "launch-stats"):
//   call      the CPU launch call's duration (cudaLaunchKernel, cudaMemcpyAsync ...);
//   delay     kernel start - launch call start (how far the CPU runs ahead of the GPU);
//   queue     depth(t) = launches on the stream whose call has started (launch start <= t) and
//             whose work has not finished (t < kernel end): the work the CPU has put on the
//             stream and the GPU has not retired yet, the running item included;
//   blocked   a call that takes at least kBlockedFactor x the stream's median call while the queue,
//             counting the item it launches, is at >= kFullFraction of the stream's maximum depth
//             (and that maximum is >= kMinFullDepth): the CPU waited for a free slot in the
//             launch queue. Its blocked time is the excess over the median call.
// Work items whose kernel ends before their launch call starts (inconsistent clocks) are left
// out of the queue depth; their delay is negative and counted as it is.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "plugins/api/plugin_sdk.h"
#include "plugins/builtin/common/stats.h"
#include "storage/units.h"

namespace {

using namespace ss::analysis;

constexpr double kBlockedFactor = 10.0;
constexpr double kFullFraction = 0.9;
constexpr int kMinFullDepth = 2;
constexpr std::size_t kOutliers = 10;

struct Launch {
  std::int64_t id = 0;
  std::int64_t call_start = 0, call_ns = 0;
  std::int64_t kernel_start = 0, kernel_end = 0;
  std::string kernel, api;
  int depth = 0;  // queue depth at the call's start, counting the item it launches
  bool blocked = false;
  std::int64_t delay() const { return kernel_start - call_start; }
};

struct Stream {
  int rank = 0;
  std::int64_t native = 0;
  std::vector<Launch> launches;  // sorted by call start
  int max_depth = 0;             // over the whole profile
  int window_max_depth = 0;      // over the selected window
  std::int64_t median_call = 0;  // over the whole profile
};

using StreamKey = std::pair<int, std::int64_t>;  // (rank, streams.id)

std::map<StreamKey, Stream> load(const ss::plugin::Host& host) {
  std::map<StreamKey, Stream> out;
  host.query(
      "SELECT l.rank, k.stream_id, s.native_id, l.id, l.start_ns, l.duration_ns, k.start_ns,"
      " k.start_ns + k.duration_ns, kn.value, COALESCE(an.value, '')"
      " FROM launches l JOIN kernels k ON k.id = l.kernel_id JOIN streams s ON s.id = k.stream_id"
      " JOIN strings kn ON kn.id = k.name_id LEFT JOIN strings an ON an.id = l.name_id"
      " ORDER BY l.rank, k.stream_id, l.start_ns, l.id",
      [&](std::span<const ss_value> v) {
        const int rank = static_cast<int>(v[0].i);
        if (!host.rank_selected(rank)) return;
        Stream& s = out[{rank, v[1].i}];
        s.rank = rank;
        s.native = v[2].i;
        Launch l;
        l.id = v[3].i;
        l.call_start = v[4].i;
        l.call_ns = v[5].i;
        l.kernel_start = v[6].i;
        l.kernel_end = v[7].i;
        l.kernel = v[8].s ? v[8].s : "";
        l.api = v[9].s ? v[9].s : "";
        s.launches.push_back(std::move(l));
      });
  return out;
}

// Queue depth: +1 at each call start, -1 at each kernel end; at equal times the ends come first
// (half-open [call start, kernel end)). Fills Launch::depth and the stream's maximum, and emits
// the counter track's points inside [lo, hi] (the value at lo first, when the window starts late).
void sweep_queue(const ss::plugin::Host& host, Stream& s, std::int64_t lo, std::int64_t hi) {
  struct Ev {
    std::int64_t t;
    int delta;
    std::size_t launch;
  };
  std::vector<Ev> ev;
  for (std::size_t i = 0; i < s.launches.size(); ++i) {
    const Launch& l = s.launches[i];
    if (l.kernel_end <= l.call_start) continue;  // inconsistent clocks: never queued
    ev.push_back({l.call_start, +1, i});
    ev.push_back({l.kernel_end, -1, i});
  }
  std::sort(ev.begin(), ev.end(), [](const Ev& a, const Ev& b) {
    return a.t != b.t ? a.t < b.t : a.delta != b.delta ? a.delta < b.delta : a.launch < b.launch;
  });
  char name[96];
  std::snprintf(name, sizeof name, "launch queue stream %lld", static_cast<long long>(s.native));
  host.counter_track(name, s.rank, "kernels");
  int depth = 0;
  bool started = false;
  for (std::size_t i = 0; i < ev.size();) {
    const std::int64_t t = ev[i].t;
    if (t > lo && !started && host.has_time()) {
      host.counter_point(lo, depth);
      s.window_max_depth = std::max(s.window_max_depth, depth);
      started = true;
    }
    for (; i < ev.size() && ev[i].t == t; ++i) {
      depth += ev[i].delta;
      if (ev[i].delta > 0) s.launches[ev[i].launch].depth = depth;
      s.max_depth = std::max(s.max_depth, depth);
    }
    if (t >= lo && t <= hi) {
      host.counter_point(t, depth);
      s.window_max_depth = std::max(s.window_max_depth, depth);
      started = true;
    }
  }
}

std::string us(std::int64_t ns) { return ss::format_duration_ns(ns); }

void run(const ss::plugin::Host& host) {
  if (const LaunchRecords lr = launch_records(host); lr != LaunchRecords::Present) {
    host.finding(SS_SEVERITY_INFO, no_launches_message(lr));
    return;
  }
  const std::int64_t lo = host.from(), hi = host.to();
  std::map<StreamKey, Stream> streams = load(host);

  host.table("per_stream", {"rank", "stream", "launches", "call_mean_ns", "call_p50_ns", "call_p99_ns", "call_max_ns",
                            "delay_mean_ns", "delay_p50_ns", "delay_p99_ns", "delay_max_ns", "max_queue_depth",
                            "blocked_calls", "blocked_ns"});
  std::vector<std::pair<const Launch*, const Stream*>> owner;
  std::int64_t total = 0, negative = 0;
  const Stream* slowest = nullptr;
  std::int64_t slowest_p50 = -1;
  std::int64_t blocked_total = 0;
  const Launch* worst_blocked = nullptr;
  const Stream* worst_blocked_stream = nullptr;
  for (auto& [key, s] : streams) {
    sweep_queue(host, s, lo, hi);
    std::vector<std::int64_t> all_calls;
    for (const auto& l : s.launches) all_calls.push_back(l.call_ns);
    s.median_call = summarize(all_calls).p50;
    std::vector<std::int64_t> calls, delays;
    std::int64_t blocked_calls = 0, blocked_ns = 0;
    for (auto& l : s.launches) {
      if (l.call_start < lo || l.call_start > hi) continue;
      calls.push_back(l.call_ns);
      delays.push_back(l.delay());
      negative += l.delay() < 0;
      l.blocked = s.max_depth >= kMinFullDepth && l.call_ns > 0 &&
                  static_cast<double>(l.call_ns) >= kBlockedFactor * static_cast<double>(s.median_call) &&
                  static_cast<double>(l.depth) >= kFullFraction * static_cast<double>(s.max_depth);
      if (l.blocked) {
        ++blocked_calls;
        blocked_ns += l.call_ns - s.median_call;
        if (!worst_blocked || l.call_ns > worst_blocked->call_ns) worst_blocked = &l, worst_blocked_stream = &s;
      }
      owner.push_back({&l, &s});
    }
    if (calls.empty()) continue;
    const Summary c = summarize(calls), d = summarize(delays);
    host.row({s.rank, s.native, c.count, static_cast<std::int64_t>(c.mean + 0.5), c.p50, c.p99, c.max,
              static_cast<std::int64_t>(d.mean + (d.mean >= 0 ? 0.5 : -0.5)), d.p50, d.p99, d.max, s.window_max_depth,
              blocked_calls, blocked_ns});
    total += c.count;
    blocked_total += blocked_ns;
    if (d.p50 > slowest_p50) slowest_p50 = d.p50, slowest = &s;
  }

  // Outliers: the longest delays and the longest calls, each with a timeline marker.
  host.table("outliers", {"by", "rank", "stream", "kernel", "api", "launch_time_ns", "kernel_time_ns", "call_ns",
                          "delay_ns", "queue_depth", "blocked"});
  auto list = [&](const char* by, auto key) {
    auto v = owner;
    std::sort(v.begin(), v.end(), [&](const auto& a, const auto& b) {
      return key(*a.first) != key(*b.first) ? key(*a.first) > key(*b.first) : a.first->id < b.first->id;
    });
    if (v.size() > kOutliers) v.resize(kOutliers);
    for (const auto& [l, s] : v) {
      host.row({by, s->rank, s->native, l->kernel, l->api, l->call_start, l->kernel_start, l->call_ns, l->delay(),
                l->depth, l->blocked ? "yes" : "no"});
      if (std::string(by) == "delay")
        host.marker(l->call_start, std::max(l->call_start, l->kernel_start), s->rank,
                    "launch delay " + us(l->delay()) + ": " +
                        (l->kernel.size() > 60 ? l->kernel.substr(0, 57) + "..." : l->kernel));
      else
        host.marker(l->call_start, l->call_start + l->call_ns, s->rank,
                    std::string(l->blocked ? "blocked launch " : "long launch call ") + us(l->call_ns) + ": " + l->api);
    }
  };
  list("delay", [](const Launch& l) { return l.delay(); });
  list("call", [](const Launch& l) { return l.call_ns; });

  if (total == 0) {
    host.finding(SS_SEVERITY_INFO,
                 "no launch records in the selection (the profile has a launches table, but none of "
                 "its calls start in the selected window on the selected ranks)");
    return;
  }
  char msg[320];
  if (slowest) {
    std::snprintf(msg, sizeof msg,
                  "stream %lld has the longest median launch delay, %s: the GPU starts its work that long after the "
                  "CPU issues it (a long delay is a deep queue, the CPU running ahead)",
                  static_cast<long long>(slowest->native), us(slowest_p50).c_str());
    host.finding(SS_SEVERITY_INFO, msg, 1, 0, slowest->rank);
  }
  if (worst_blocked) {
    std::snprintf(msg, sizeof msg,
                  "the CPU was blocked on a full launch queue for %s in all (calls >= %.0fx the stream's median with "
                  "its queue at its maximum depth); the longest: %s on stream %lld",
                  us(blocked_total).c_str(), kBlockedFactor, us(worst_blocked->call_ns).c_str(),
                  static_cast<long long>(worst_blocked_stream->native));
    host.finding(SS_SEVERITY_WARNING, msg, worst_blocked->call_start,
                 worst_blocked->call_start + worst_blocked->call_ns, worst_blocked_stream->rank);
  }
  if (negative > 0) {
    std::snprintf(msg, sizeof msg,
                  "%lld launches have their kernel starting before the launch call (negative delay): the CPU and "
                  "GPU clocks of the trace disagree",
                  static_cast<long long>(negative));
    host.finding(SS_SEVERITY_WARNING, msg);
  }
}

}  // namespace

SS_DEFINE_PLUGIN("launch-stats", "Kernel launch calls, launch delay and launch queue depth per stream",
                 "Per rank and stream: CPU launch-call duration and launch delay (kernel start - call start) "
                 "statistics, queue depth over time, the outlier launches, and time the CPU was blocked on a full "
                 "launch queue. Needs the profile's launch records.",
                 &run)
