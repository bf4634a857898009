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
#include <array>
#include <climits>
#include <span>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "plugins/api/plugin_sdk.h"
#include "plugins/builtin/common/profile_access.h"

namespace {

using namespace ss::analysis;

enum Kind { kCompute, kCommunication, kCopy, kLaunch, kHost, kIdle, kKinds };
const char* kKindNames[kKinds] = {"compute", "communication", "copy", "launch", "host", "idle"};
constexpr std::uint8_t kAllGatherType = 2;
constexpr std::size_t kMaxMarkers = 2000;

struct Kernel {
  std::int64_t start, end;
  std::uint32_t id, name;
  std::int32_t module;
  std::uint8_t category;
  int stream;     // index into RankKernels::streams
  int pos;        // position in its stream
};

struct RankKernels {
  std::vector<std::vector<Kernel>> streams;  // per stream, sorted by start
  std::vector<const Kernel*> by_end;         // every kernel, sorted by end
  // The kernel with the latest end <= t (nullptr when none).
  const Kernel* latest_ending_by(std::int64_t t) const {
    auto it = std::upper_bound(by_end.begin(), by_end.end(), t, [](std::int64_t x, const Kernel* k) { return x < k->end; });
    return it == by_end.begin() ? nullptr : *(it - 1);
  }
};

struct Launch {
  std::int64_t start, end;
};

struct Coll {
  int rank;
  std::int64_t start;
  std::uint32_t kernel;
  std::uint8_t type;
  int module;
};

struct Segment {
  int rank;
  std::int64_t start, end;
  Kind kind;
  std::uint32_t kernel;  // the kernel for kernel segments, else 0
};

struct Walker {
  const ss::plugin::Host& host;
  ProfileAccess& p;
  std::map<int, RankKernels> ranks;
  std::unordered_map<std::uint32_t, Launch> launches;
  std::unordered_map<std::uint32_t, std::pair<std::int64_t, std::int64_t>> coll_of_kernel;  // -> (group, seq)
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<Coll>> peers;
  std::unordered_map<std::uint32_t, const Kernel*> kernel_by_id;

  Kind kind_of(const Kernel& k) const {
    if (k.category == SS_KERNEL_COLLECTIVE) return kCommunication;
    if (k.category == SS_KERNEL_MEMCPY || k.category == SS_KERNEL_MEMSET) return kCopy;
    return kCompute;
  }

  // Walks [lo, hi] backwards from the kernel `cur` of `rank`; appends segments (latest first).
  void walk(int rank, const Kernel* cur, std::int64_t lo, std::int64_t hi, std::vector<Segment>& out,
            std::int64_t& peer_wait) {
    std::int64_t t = hi;
    auto add = [&](int r, std::int64_t a, Kind k, std::uint32_t kernel) {
      a = std::max(a, lo);
      if (a < t) out.push_back({r, a, t, k, kernel});
      t = std::min(t, std::max(a, lo));
    };
    if (cur && cur->end < t) add(rank, cur->end, kIdle, 0);
    // Each step moves t back or to another kernel; the bound only stops a pathological profile
    // (many zero-length kernels at one instant) from looping.
    const std::size_t bound = 4 * kernel_by_id.size() + 16;
    for (std::size_t guard = 0; cur && t > lo && guard < bound; ++guard) {
      // The kernel itself; a collective whose last peer arrived after it started jumps there.
      std::int64_t s = cur->start;
      if (cur->category == SS_KERNEL_COLLECTIVE) {
        if (auto c = coll_of_kernel.find(cur->id); c != coll_of_kernel.end()) {
          const Coll* last = nullptr;
          for (const auto& peer : peers[c->second])
            if (!last || peer.start > last->start) last = &peer;
          if (last && last->rank != rank && last->start > s && last->start < t) {
            add(rank, last->start, kCommunication, cur->id);
            peer_wait += last->start - std::max(s, lo);
            auto k = kernel_by_id.find(last->kernel);
            if (k == kernel_by_id.end()) break;
            rank = last->rank;
            cur = k->second;
            s = cur->start;
          }
        }
      }
      add(rank, s, kind_of(*cur), cur->id);
      if (t <= lo) break;
      // What the kernel waited for.
      const RankKernels& rk = ranks[rank];
      const Kernel* prev_stream = cur->pos > 0 ? &rk.streams[static_cast<std::size_t>(cur->stream)][static_cast<std::size_t>(cur->pos - 1)] : nullptr;
      if (prev_stream && prev_stream->end > t) prev_stream = nullptr;  // overlapping on one stream: not a wait
      const Kernel* prev_any = rk.latest_ending_by(t);
      if (prev_any == cur) prev_any = nullptr;  // a zero-length kernel is not its own cause
      const auto launch = launches.find(cur->id);
      const std::int64_t e_stream = prev_stream ? prev_stream->end : INT64_MIN;
      const std::int64_t e_any = prev_any ? prev_any->end : INT64_MIN;
      const std::int64_t e_launch = launch != launches.end() ? std::min(launch->second.end, t) : INT64_MIN;
      if (e_launch > e_stream && e_launch > e_any) {
        add(rank, std::min(launch->second.start, t), kLaunch, 0);
        const Kernel* before = rk.latest_ending_by(t);
        add(rank, before ? before->end : lo, kHost, 0);
        cur = before;
      } else if (prev_stream && e_stream >= e_any) {
        add(rank, e_stream, kIdle, 0);
        cur = prev_stream;
      } else if (prev_any) {
        add(rank, e_any, kIdle, 0);
        cur = prev_any;
      } else {
        cur = nullptr;
      }
    }
    if (t > lo) out.push_back({rank, lo, t, kIdle, 0});
  }
};

void run(const ss::plugin::Host& host) {
  ProfileAccess p(host);
  Walker w{host, p, {}, {}, {}, {}, {}};
  for (const auto& s : p.streams) {
    auto& rk = w.ranks[s.rank];
    rk.streams.emplace_back();
    auto& v = rk.streams.back();
    for (std::size_t i = 0; i < s.count; ++i) {
      const auto& e = s.events[i];
      if (e.end < e.start) continue;
      v.push_back({e.start, e.end, e.id, e.name, e.module, e.category, static_cast<int>(rk.streams.size() - 1),
                   static_cast<int>(v.size())});
    }
  }
  for (auto& [rank, rk] : w.ranks) {
    for (const auto& st : rk.streams)
      for (const auto& k : st) {
        rk.by_end.push_back(&k);
        w.kernel_by_id[k.id] = &k;
      }
    std::sort(rk.by_end.begin(), rk.by_end.end(), [](const Kernel* a, const Kernel* b) { return a->end < b->end; });
  }
  bool have_launches = false;
  host.query("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'launches'",
             [&](std::span<const ss_value> row) { have_launches = row[0].i > 0; });
  if (have_launches)
    host.query("SELECT kernel_id, start_ns, start_ns + duration_ns FROM launches", [&](std::span<const ss_value> row) {
      w.launches[static_cast<std::uint32_t>(row[0].i)] = {row[1].i, row[2].i};
    });
  for (const auto& c : host.collectives()) {
    if (c.kernel_id < 0 || c.sequence < 0 || !host.rank_selected(c.rank)) continue;  // group -1: one unnamed group, as stragglers does
    const auto key = std::make_pair(std::int64_t{c.process_group}, c.sequence);
    const auto k = w.kernel_by_id.find(static_cast<std::uint32_t>(c.kernel_id));
    w.coll_of_kernel[static_cast<std::uint32_t>(c.kernel_id)] = key;
    w.peers[key].push_back({c.rank, c.start, static_cast<std::uint32_t>(c.kernel_id), c.type,
                            k != w.kernel_by_id.end() ? k->second->module : -1});
  }

  // Steps: per step number, from the earliest rank start to the latest rank end; the walk starts
  // on the rank that ends last. Without steps: the selection's kernels as one step.
  struct StepSpan {
    std::int64_t lo = INT64_MAX, hi = INT64_MIN;
    int last_rank = -1;
  };
  std::map<std::int64_t, StepSpan> steps;
  host.query("SELECT rank, number, start_ns, start_ns + duration_ns FROM steps", [&](std::span<const ss_value> row) {
    const int rank = static_cast<int>(row[0].i);
    if (!host.rank_selected(rank) || !w.ranks.count(rank)) return;
    if (row[3].i < host.from() || row[2].i > host.to()) return;
    auto& s = steps[row[1].i];
    s.lo = std::min(s.lo, std::max(row[2].i, host.from()));
    if (std::min(row[3].i, host.to()) > s.hi) s.hi = std::min(row[3].i, host.to()), s.last_rank = rank;
  });
  if (steps.empty()) {
    StepSpan s;
    for (const auto& r : p.ranks) {
      s.lo = std::min(s.lo, r.window.start);
      if (r.window.end > s.hi) s.hi = r.window.end, s.last_rank = r.rank;
    }
    if (s.last_rank >= 0) steps[-1] = s;
  }

  host.table("steps", {"step", "start_ns", "duration_ns", "compute_ns", "communication_ns", "copy_ns", "launch_ns",
                       "host_ns", "idle_ns", "peer_wait_ns", "ranks_on_path"});
  std::vector<Segment> all;
  for (const auto& [number, s] : steps) {
    std::vector<Segment> path;
    std::int64_t peer_wait = 0;
    const Kernel* last = w.ranks[s.last_rank].latest_ending_by(s.hi);
    w.walk(s.last_rank, last, s.lo, s.hi, path, peer_wait);
    std::array<std::int64_t, kKinds> by{};
    std::map<int, bool> on_path;
    for (const auto& seg : path) {
      by[seg.kind] += seg.end - seg.start;
      on_path[seg.rank] = true;
    }
    host.row({number, s.lo, s.hi - s.lo, by[kCompute], by[kCommunication], by[kCopy], by[kLaunch], by[kHost], by[kIdle],
              peer_wait, static_cast<std::int64_t>(on_path.size())});
    all.insert(all.end(), path.begin(), path.end());
  }
  // All-gathers: time on the path per FSDP unit, against their total time.
  std::map<std::string, std::array<std::int64_t, 3>> units;  // on path, gathers on path, total
  std::unordered_map<std::uint32_t, bool> counted;
  for (const auto& seg : all) {
    if (seg.kind != kCommunication) continue;
    auto c = w.coll_of_kernel.find(seg.kernel);
    if (c == w.coll_of_kernel.end()) continue;
    const auto& ps = w.peers[c->second];
    if (ps.empty() || ps.front().type != kAllGatherType) continue;
    const auto k = w.kernel_by_id.at(seg.kernel);
    auto& u = units[p.module_name(p.unit_of(k->module))];
    u[0] += seg.end - seg.start;
    if (!counted[seg.kernel]) counted[seg.kernel] = true, u[1] += 1;
  }
  for (const auto& [key, ps] : w.peers)
    for (const auto& c : ps)
      if (c.type == kAllGatherType && units.count(p.module_name(p.unit_of(c.module)))) {
        const auto k = w.kernel_by_id.find(c.kernel);
        if (k != w.kernel_by_id.end()) units[p.module_name(p.unit_of(c.module))][2] += k->second->end - k->second->start;
      }
  std::vector<std::pair<std::string, std::array<std::int64_t, 3>>> ranked(units.begin(), units.end());
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.second[0] > b.second[0]; });
  host.table("all_gathers_on_path", {"unit", "on_path_ns", "gathers_on_path", "all_gather_ns", "on_path_pct"});
  for (const auto& [unit, u] : ranked)
    host.row({unit, u[0], u[1], u[2], u[2] > 0 ? 100.0 * double(u[0]) / double(u[2]) : 0.0});

  host.table("path", {"rank", "start_ns", "end_ns", "duration_ns", "kind", "kernel"});
  std::vector<const Segment*> longest;
  for (const auto& seg : all) longest.push_back(&seg);
  std::sort(longest.begin(), longest.end(), [](const Segment* a, const Segment* b) {
    return a->end - a->start != b->end - b->start ? a->end - a->start > b->end - b->start : a->start < b->start;
  });
  if (longest.size() > kMaxMarkers) longest.resize(kMaxMarkers);
  for (const Segment* seg : longest) {
    std::string name;
    if (seg->kernel) {
      auto k = w.kernel_by_id.find(seg->kernel);
      if (k != w.kernel_by_id.end()) name = std::string(host.str(k->second->name));
    }
    host.row({seg->rank, seg->start, seg->end, seg->end - seg->start, kKindNames[seg->kind], name});
    host.marker(seg->start, seg->end, seg->rank, std::string("critical: ") + kKindNames[seg->kind]);
  }
  if (!have_launches)
    host.finding(SS_SEVERITY_INFO, "the profile has no launch records: host launch time cannot be on the path");
  if (!ranked.empty() && ranked.front().second[0] > 0) {
    char msg[300];
    std::snprintf(msg, sizeof msg, "the all-gathers of %s are the most exposed: %.1f us on the critical path",
                  ranked.front().first.c_str(), double(ranked.front().second[0]) / 1e3);
    host.finding(SS_SEVERITY_WARNING, msg);
  }
}

}  // namespace

SS_DEFINE_PLUGIN("critical-path", "Critical path of each step",
                 "The chain of kernels, launches and cross-rank collectives that sets each step's time, broken "
                 "down into compute, communication, copies, launch and host time and idle; all-gathers ranked by "
                 "their time on the path per FSDP unit.",
                 &run)
