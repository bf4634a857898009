#include "plugins/builtin/common/critical_path_walk.h"

#include <algorithm>
#include <climits>
#include <map>
#include <set>
#include <span>
#include <unordered_map>

namespace ss::analysis {
namespace {

constexpr std::uint8_t kAllGatherType = 2;

struct Kernel {
  std::int64_t start, end;
  std::uint32_t id, name;
  std::int32_t module;
  std::uint8_t category;
  int rank;    // its stream's rank (a collective row may name another: the walk trusts the stream)
  int stream;  // index into RankKernels::streams
  int pos;     // position in its stream
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

struct Coll {
  int rank;
  std::int64_t start;
  std::uint32_t kernel;
  std::uint8_t type;
  int module;
  std::int64_t bytes;
};

struct Walker {
  std::map<int, RankKernels> ranks;
  std::unordered_map<std::uint32_t, LaunchCall> launches;
  std::unordered_map<std::uint32_t, std::pair<std::int64_t, std::int64_t>> coll_of_kernel;  // -> (group, seq)
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<Coll>> peers;
  std::set<std::pair<std::int64_t, std::int64_t>> unmatched;  // peers that are not one operation
  std::unordered_map<std::uint32_t, const Kernel*> kernel_by_id;

  static PathKind kind_of(const Kernel& k) {
    if (k.category == SS_KERNEL_COLLECTIVE) return kPathCommunication;
    if (k.category == SS_KERNEL_MEMCPY || k.category == SS_KERNEL_MEMSET) return kPathCopy;
    return kPathCompute;
  }

  // Walks [lo, hi] backwards from the kernel `cur` of `rank`; appends segments (latest first).
  void walk(int rank, const Kernel* cur, std::int64_t lo, std::int64_t hi, StepPath& out) {
    std::int64_t t = hi;
    auto add = [&](int r, std::int64_t a, PathKind k, std::uint32_t kernel) {
      a = std::max(a, lo);
      if (a < t) out.segments.push_back({r, a, t, k, kernel, {}});
      t = std::min(t, a);
    };
    if (cur && cur->end < t) add(rank, cur->end, kPathIdle, 0);
    // Each turn moves t back or moves to another kernel; the bound only stops a pathological
    // profile (many zero-length kernels at one instant) from looping.
    const std::size_t bound = 4 * kernel_by_id.size() + 16;
    for (std::size_t guard = 0; cur && t > lo && guard < bound; ++guard) {
      // The kernel itself; a collective whose last peer arrived after it started jumps there.
      std::int64_t s = cur->start;
      if (cur->category == SS_KERNEL_COLLECTIVE) {
        if (auto c = coll_of_kernel.find(cur->id); c != coll_of_kernel.end() && !unmatched.count(c->second)) {
          const Coll* last = nullptr;
          for (const auto& peer : peers[c->second])
            if (!last || peer.start > last->start) last = &peer;
          if (last && last->rank != rank && last->start > s && last->start < t) {
            add(rank, last->start, kPathCommunication, cur->id);
            out.peer_wait += last->start - std::max(s, lo);
            auto k = kernel_by_id.find(last->kernel);
            if (k == kernel_by_id.end()) break;
            cur = k->second;
            rank = cur->rank;
            s = cur->start;
          }
        }
      }
      add(rank, s, kind_of(*cur), cur->id);
      if (t <= lo) break;
      // What the kernel waited for.
      const RankKernels& rk = ranks[rank];
      const Kernel* prev_stream =
          cur->pos > 0 ? &rk.streams[static_cast<std::size_t>(cur->stream)][static_cast<std::size_t>(cur->pos - 1)] : nullptr;
      if (prev_stream && prev_stream->end > t) prev_stream = nullptr;  // overlapping on one stream: not a wait
      const Kernel* prev_any = rk.latest_ending_by(t);
      if (prev_any == cur) prev_any = nullptr;  // a zero-length kernel is not its own cause
      const auto launch = launches.find(cur->id);
      const std::int64_t e_stream = prev_stream ? prev_stream->end : INT64_MIN;
      const std::int64_t e_any = prev_any ? prev_any->end : INT64_MIN;
      const std::int64_t e_launch = launch != launches.end() ? std::min(launch->second.end, t) : INT64_MIN;
      if (e_launch > e_stream && e_launch > e_any) {
        add(rank, std::min(launch->second.start, t), kPathLaunch, 0);
        const Kernel* before = rk.latest_ending_by(t);
        add(rank, before ? before->end : lo, kPathHost, 0);
        cur = before;
      } else if (prev_stream && e_stream >= e_any) {
        add(rank, e_stream, kPathIdle, 0);
        cur = prev_stream;
      } else if (prev_any) {
        add(rank, e_any, kPathIdle, 0);
        cur = prev_any;
      } else {
        cur = nullptr;
      }
    }
    if (t > lo) out.segments.push_back({rank, lo, t, kPathIdle, 0, {}});
  }
};

}  // namespace

const char* path_kind_name(PathKind k) {
  static const char* kNames[kPathKinds] = {"compute", "communication", "copy", "launch", "host", "idle"};
  return k < kPathKinds ? kNames[k] : "?";
}

CriticalPath compute_critical_path(const ss::plugin::Host& host, ProfileAccess& p) {
  Walker w;
  for (const auto& s : p.streams) {
    auto& rk = w.ranks[s.rank];
    rk.streams.emplace_back();
    auto& v = rk.streams.back();
    for (std::size_t i = 0; i < s.count; ++i) {
      const auto& e = s.events[i];
      if (e.end < e.start) continue;
      v.push_back({e.start, e.end, e.id, e.name, e.module, e.category, s.rank, static_cast<int>(rk.streams.size() - 1),
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
  CriticalPath out;
  out.launch_records = launch_records(host);
  w.launches = launch_calls(host, out.launch_records);
  for (const auto& c : host.collectives()) {
    // Group -1 (unknown) is one unnamed group, as the stragglers analysis matches them.
    if (c.kernel_id < 0 || c.sequence < 0 || !host.rank_selected(c.rank)) continue;
    const auto key = std::make_pair(std::int64_t{c.process_group}, c.sequence);
    const auto k = w.kernel_by_id.find(static_cast<std::uint32_t>(c.kernel_id));
    w.coll_of_kernel[static_cast<std::uint32_t>(c.kernel_id)] = key;
    w.peers[key].push_back({c.rank, c.start, static_cast<std::uint32_t>(c.kernel_id), c.type,
                            k != w.kernel_by_id.end() ? k->second->module : -1, c.bytes});
  }
  // A sequence number that joins different operations across ranks is no match: no jump through it.
  for (const auto& [key, ps] : w.peers)
    if (std::any_of(ps.begin(), ps.end(), [&](const Coll& c) { return !same_operation(ps.front().type, ps.front().bytes, c.type, c.bytes); }))
      w.unmatched.insert(key);

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
  for (const auto& [number, s] : steps) {
    StepPath sp;
    sp.step = number;
    sp.start = s.lo;
    sp.end = s.hi;
    w.walk(s.last_rank, w.ranks[s.last_rank].latest_ending_by(s.hi), s.lo, s.hi, sp);
    std::map<int, bool> on_path;
    for (auto& seg : sp.segments) {
      sp.by_kind[seg.kind] += seg.end - seg.start;
      on_path[seg.rank] = true;
      if (seg.kernel)
        if (auto k = w.kernel_by_id.find(seg.kernel); k != w.kernel_by_id.end()) seg.kernel_name = std::string(host.str(k->second->name));
    }
    sp.ranks_on_path = static_cast<int>(on_path.size());
    out.steps.push_back(std::move(sp));
  }

  // All-gathers: time on the path per FSDP unit, against all of their time.
  std::map<std::string, UnitOnPath> units;
  std::unordered_map<std::uint32_t, bool> counted;
  for (const auto& sp : out.steps)
    for (const auto& seg : sp.segments) {
      if (seg.kind != kPathCommunication) continue;
      auto c = w.coll_of_kernel.find(seg.kernel);
      if (c == w.coll_of_kernel.end()) continue;
      const auto& ps = w.peers[c->second];
      const auto own = std::find_if(ps.begin(), ps.end(), [&](const Coll& x) { return x.kernel == seg.kernel; });
      if (own == ps.end() || own->type != kAllGatherType) continue;
      auto& u = units[p.module_name(p.unit_of(w.kernel_by_id.at(seg.kernel)->module))];
      u.on_path_ns += seg.end - seg.start;
      if (!counted[seg.kernel]) counted[seg.kernel] = true, u.gathers_on_path += 1;
    }
  for (const auto& [key, ps] : w.peers)
    for (const auto& c : ps) {
      if (c.type != kAllGatherType) continue;
      auto u = units.find(p.module_name(p.unit_of(c.module)));
      auto k = w.kernel_by_id.find(c.kernel);
      if (u != units.end() && k != w.kernel_by_id.end()) u->second.all_gather_ns += k->second->end - k->second->start;
    }
  for (auto& [name, u] : units) {
    u.unit = name;
    out.all_gathers.push_back(u);
  }
  std::sort(out.all_gathers.begin(), out.all_gathers.end(),
            [](const UnitOnPath& a, const UnitOnPath& b) { return a.on_path_ns > b.on_path_ns; });
  return out;
}

}  // namespace ss::analysis
