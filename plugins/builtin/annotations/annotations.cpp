// Kernels and GPU time per user annotation and per module, and frequent kernel sequences
// (docs/analyses.md, "annotations"). Work items (kernels, copies, memsets) that start in the
// window on the selected ranks are attributed:
//   to an annotation (record_function / NVTX: ranges of kind Annotation on CPU threads,
//   GpuAnnotation on GPU streams): the innermost Annotation range on the launching thread that
//   contains the launch call's start (innermost = latest start, then shortest), when the profile
//   has launch records; otherwise, or when no annotation is active at the launch, the
//   GpuAnnotation range on the item's own stream that overlaps it most (ties: the latest start,
//   the inner one); else "(none)". Inclusive counts add the item to every distinct annotation
//   name active at the launch (or overlapping it on the GPU lane);
//   to a module: the kernel's module_id (the innermost module range active at launch, set by
//   the importer).
// Sequences (sequences.h) are repeated runs of consecutive names on one stream.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "plugins/api/plugin_sdk.h"
#include "plugins/builtin/annotations/sequences.h"
#include "plugins/builtin/common/stats.h"

namespace {

using namespace ss::analysis;

struct Item {
  std::int64_t id = 0, stream = 0, start = 0, end = 0, name = 0, module = -1;
  int rank = 0;
  int annotation = -1;  // index into ranges, -1 none
  bool by_launch = false;
  std::vector<int> inclusive;  // indices into ranges (distinct names)
};

struct Range {
  std::int64_t thread = -1, stream = -1, start = 0, end = 0, name = 0;
  int rank = 0;
};

struct Totals {
  std::int64_t items = 0, gpu = 0, inclusive_items = 0, inclusive_gpu = 0, by_launch = 0, by_gpu_lane = 0, ranges = 0;
  std::map<std::int64_t, std::int64_t> by_kernel;  // name id -> self time
};

std::int64_t top_of(const std::map<std::int64_t, std::int64_t>& m) {
  std::int64_t best = -1, t = -1;
  for (const auto& [n, v] : m)
    if (v > t) t = v, best = n;
  return best;
}

// Innermost CPU annotation at each launch, per (rank, thread): a sweep with a stack of open
// ranges (pushed in start order, popped once ended), so the top is the latest-started open one.
void attribute_by_launch(const ss::plugin::Host& host, std::vector<Item>& items, const std::vector<Range>& ranges) {
  std::unordered_map<std::int64_t, std::size_t> item_of;
  for (std::size_t i = 0; i < items.size(); ++i) item_of[items[i].id] = i;
  struct L {
    std::int64_t thread, t;
    std::size_t item;
  };
  std::vector<L> launches;
  host.query("SELECT kernel_id, thread_id, start_ns FROM launches WHERE thread_id IS NOT NULL",
             [&](std::span<const ss_value> v) {
               auto it = item_of.find(v[0].i);
               if (it != item_of.end()) launches.push_back({v[1].i, v[2].i, it->second});
             });
  std::vector<int> order;
  for (std::size_t i = 0; i < ranges.size(); ++i)
    if (ranges[i].thread >= 0) order.push_back(static_cast<int>(i));
  auto by_thread_start = [&](int a, int b) {
    const Range &x = ranges[a], &y = ranges[b];
    if (x.thread != y.thread) return x.thread < y.thread;
    return x.start != y.start ? x.start < y.start : x.end > y.end;
  };
  std::sort(order.begin(), order.end(), by_thread_start);
  std::sort(launches.begin(), launches.end(),
            [](const L& a, const L& b) { return a.thread != b.thread ? a.thread < b.thread : a.t < b.t; });
  std::size_t ri = 0;
  std::vector<int> stack;
  std::int64_t thread = INT64_MIN;
  for (const L& l : launches) {
    if (l.thread != thread) {
      thread = l.thread;
      stack.clear();
      while (ri < order.size() && ranges[order[ri]].thread < thread) ++ri;
    }
    while (ri < order.size() && ranges[order[ri]].thread == thread && ranges[order[ri]].start <= l.t)
      stack.push_back(order[ri++]);
    // Drop ended ranges anywhere in the stack (ranges on a thread nest, but be safe when not).
    stack.erase(std::remove_if(stack.begin(), stack.end(), [&](int r) { return ranges[r].end <= l.t; }), stack.end());
    if (stack.empty()) continue;
    Item& it = items[l.item];
    it.annotation = stack.back();
    it.by_launch = true;
    std::set<std::int64_t> seen;
    for (int r : stack)
      if (seen.insert(ranges[r].name).second) it.inclusive.push_back(r);
  }
}

// GPU-lane fallback: per stream, the overlapping GpuAnnotation range with the largest overlap.
void attribute_by_gpu_lane(std::vector<Item>& items, const std::vector<Range>& ranges) {
  std::map<std::int64_t, std::vector<int>> lane;  // stream -> ranges by start
  for (std::size_t i = 0; i < ranges.size(); ++i)
    if (ranges[i].stream >= 0) lane[ranges[i].stream].push_back(static_cast<int>(i));
  for (auto& [s, v] : lane)
    std::sort(v.begin(), v.end(), [&](int a, int b) { return ranges[a].start < ranges[b].start; });
  std::map<std::int64_t, std::vector<std::size_t>> by_stream;
  for (std::size_t i = 0; i < items.size(); ++i)
    if (items[i].annotation < 0) by_stream[items[i].stream].push_back(i);
  for (auto& [s, idx] : by_stream) {
    auto it = lane.find(s);
    if (it == lane.end()) continue;
    const auto& rs = it->second;
    std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return items[a].start < items[b].start; });
    std::size_t next = 0;
    std::vector<int> active;
    for (std::size_t i : idx) {
      Item& k = items[i];
      while (next < rs.size() && ranges[rs[next]].start < std::max(k.end, k.start + 1)) active.push_back(rs[next++]);
      // Items come by start, so a range ending at or before this one's start ends before all later ones.
      active.erase(std::remove_if(active.begin(), active.end(), [&](int r) { return ranges[r].end <= k.start; }),
                   active.end());
      std::int64_t best = -1;
      std::set<std::int64_t> seen;
      for (int r : active) {
        // A zero-length item counts as overlapping the range that contains its start.
        const std::int64_t ov =
            std::min(ranges[r].end, std::max(k.end, k.start + 1)) - std::max(ranges[r].start, k.start);
        if (ov <= 0) continue;
        if (ov > best || (ov == best && k.annotation >= 0 && ranges[r].start >= ranges[k.annotation].start))
          best = ov, k.annotation = r;
        if (seen.insert(ranges[r].name).second) k.inclusive.push_back(r);
      }
    }
  }
}

std::string short_name(const std::string& s, std::size_t n = 60) {
  return s.size() <= n ? s : s.substr(0, n - 3) + "...";
}

void run(const ss::plugin::Host& host) {
  const std::int64_t lo = host.from(), hi = host.to();
  const LaunchRecords records = launch_records(host);
  const bool have_launches = records == LaunchRecords::Present;
  std::unordered_map<std::int64_t, std::string> str;
  host.query("SELECT id, value FROM strings", [&](std::span<const ss_value> v) { str[v[0].i] = v[1].s ? v[1].s : ""; });
  std::unordered_map<std::int64_t, std::string> module_fqn;
  host.query("SELECT id, fqn FROM modules",
             [&](std::span<const ss_value> v) { module_fqn[v[0].i] = v[1].s && *v[1].s ? v[1].s : "(root)"; });

  std::vector<Item> items;
  const std::string window = " BETWEEN " + std::to_string(lo) + " AND " + std::to_string(hi);
  host.query(
      "SELECT id, rank, stream_id, start_ns, start_ns + duration_ns, name_id, COALESCE(module_id, -1)"
      " FROM kernels WHERE start_ns" +
          window + " ORDER BY stream_id, start_ns, id",
      [&](std::span<const ss_value> v) {
        const int rank = static_cast<int>(v[1].i);
        if (!host.rank_selected(rank)) return;
        Item k;
        k.id = v[0].i;
        k.rank = rank;
        k.stream = v[2].i;
        k.start = v[3].i;
        k.end = v[4].i;
        k.name = v[5].i;
        k.module = v[6].i;
        items.push_back(std::move(k));
      });
  std::vector<Range> ranges;
  host.query(
      "SELECT rank, COALESCE(thread_id, -1), COALESCE(stream_id, -1), start_ns, start_ns + duration_ns, name_id"
      " FROM ranges WHERE kind IN (0, 5)",
      [&](std::span<const ss_value> v) {
        const int rank = static_cast<int>(v[0].i);
        if (!host.rank_selected(rank)) return;
        Range r;
        r.rank = rank;
        r.thread = v[1].i;
        r.stream = r.thread >= 0 ? -1 : v[2].i;
        r.start = v[3].i;
        r.end = v[4].i;
        r.name = v[5].i;
        ranges.push_back(r);
      });
  if (items.empty()) {
    host.finding(SS_SEVERITY_INFO, "no kernels in the selection");
    return;
  }
  if (have_launches) attribute_by_launch(host, items, ranges);
  attribute_by_gpu_lane(items, ranges);

  std::int64_t all = 0;
  for (const auto& k : items) all += k.end - k.start;
  auto pct = [&](std::int64_t x) { return all > 0 ? 100.0 * static_cast<double>(x) / static_cast<double>(all) : 0.0; };

  // Per annotation name.
  std::map<std::string, Totals> per;
  for (const auto& r : ranges)
    if (r.end >= lo && r.start <= hi) ++per[str[r.name]].ranges;
  for (const auto& k : items) {
    const std::int64_t d = k.end - k.start;
    Totals& t = per[k.annotation >= 0 ? str[ranges[k.annotation].name] : std::string("(none)")];
    ++t.items;
    t.gpu += d;
    t.by_kernel[k.name] += d;
    if (k.annotation >= 0) ++(k.by_launch ? t.by_launch : t.by_gpu_lane);
    for (int r : k.inclusive) {
      Totals& u = per[str[ranges[r].name]];
      ++u.inclusive_items;
      u.inclusive_gpu += d;
    }
  }
  std::vector<std::pair<std::string, const Totals*>> rows;
  for (const auto& [n, t] : per) rows.push_back({n, &t});
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    if ((a.first == "(none)") != (b.first == "(none)")) return b.first == "(none)";
    if (a.second->gpu != b.second->gpu) return a.second->gpu > b.second->gpu;
    if (a.second->inclusive_gpu != b.second->inclusive_gpu) return a.second->inclusive_gpu > b.second->inclusive_gpu;
    return a.first < b.first;
  });
  host.table("per_annotation", {"annotation", "ranges", "kernels", "gpu_ns", "share_pct", "inclusive_kernels",
                                "inclusive_gpu_ns", "by_launch", "by_gpu_lane", "top_kernel"});
  for (const auto& [n, t] : rows) {
    const std::int64_t top = top_of(t->by_kernel);
    host.row({n, t->ranges, t->items, t->gpu, pct(t->gpu), t->inclusive_items, t->inclusive_gpu, t->by_launch,
              t->by_gpu_lane, top >= 0 ? short_name(str[top], 120) : std::string()});
  }

  // Per module.
  std::map<std::string, Totals> mods;
  for (const auto& k : items) {
    auto it = module_fqn.find(k.module);
    Totals& t = mods[it != module_fqn.end() ? it->second : std::string("(unattributed)")];
    ++t.items;
    t.gpu += k.end - k.start;
    t.by_kernel[k.name] += k.end - k.start;
  }
  std::vector<std::pair<std::string, const Totals*>> mrows;
  for (const auto& [n, t] : mods) mrows.push_back({n, &t});
  std::sort(mrows.begin(), mrows.end(), [](const auto& a, const auto& b) {
    return a.second->gpu != b.second->gpu ? a.second->gpu > b.second->gpu : a.first < b.first;
  });
  host.table("per_module", {"module", "kernels", "gpu_ns", "share_pct", "top_kernel"});
  for (const auto& [n, t] : mrows) {
    const std::int64_t top = top_of(t->by_kernel);
    host.row({n, t->items, t->gpu, pct(t->gpu), top >= 0 ? short_name(str[top], 120) : std::string()});
  }

  // Frequent sequences.
  std::vector<StreamItems> streams;
  for (const auto& k : items) {
    if (streams.empty() || streams.back().stream != k.stream) streams.push_back({k.stream, k.rank, {}});
    streams.back().items.push_back({k.name, k.start, k.end});
  }
  const std::vector<Sequence> seqs = frequent_sequences(streams);
  host.table("sequences", {"length", "occurrences", "gpu_ns", "share_pct", "streams", "first_time_ns", "mean_span_ns",
                           "launches_saved", "kernels"});
  auto joined = [&](const Sequence& s, std::size_t each) {
    std::string out;
    for (std::size_t i = 0; i < s.names.size(); ++i) out += (i ? " -> " : "") + short_name(str[s.names[i]], each);
    return out;
  };
  for (const auto& s : seqs)
    host.row({static_cast<std::int64_t>(s.names.size()), s.occurrences, s.gpu_ns, pct(s.gpu_ns), s.streams,
              s.first_start, s.span_ns / std::max<std::int64_t>(1, s.occurrences),
              s.occurrences * static_cast<std::int64_t>(s.names.size() - 1), joined(s, 200)});
  if (!seqs.empty()) {
    const Sequence& s = seqs.front();
    for (std::size_t i = 0; i < s.marks.size() && i < 200; ++i)
      // Short labels: the names are in the sequences table, and long labels clutter the lanes.
      host.marker(s.marks[i].start, s.marks[i].end, s.marks[i].rank,
                  "sequence 1 (" + std::to_string(s.names.size()) + " kernels), " + std::to_string(i + 1) + "/" +
                      std::to_string(s.occurrences));
  }

  char msg[400];
  if (!have_launches)
    host.finding(SS_SEVERITY_INFO, std::string(no_launches_message(records)) +
                                       "; kernels are attributed by the GPU-lane annotation they overlap only");
  if (ranges.empty()) {
    host.finding(SS_SEVERITY_INFO,
                 "the profile has no annotation ranges (record_function / NVTX): every kernel is "
                 "under (none)");
  } else if (!rows.empty() && rows.front().first != "(none)" && rows.front().second->gpu > 0) {
    std::snprintf(msg, sizeof msg, "annotation '%s' has the most GPU time: %.1f%% of all kernel time (%lld kernels)",
                  short_name(rows.front().first).c_str(), pct(rows.front().second->gpu),
                  static_cast<long long>(rows.front().second->items));
    host.finding(SS_SEVERITY_INFO, msg);
  }
  if (!seqs.empty()) {
    const Sequence& s = seqs.front();
    std::snprintf(msg, sizeof msg,
                  "a run of %zu kernels repeats %lld times (%.1f%% of kernel time): a candidate for a CUDA graph or "
                  "fusion, saving up to %lld launches",
                  s.names.size(), static_cast<long long>(s.occurrences), pct(s.gpu_ns),
                  static_cast<long long>(s.occurrences * static_cast<std::int64_t>(s.names.size() - 1)));
    host.finding(SS_SEVERITY_INFO, msg, s.first_start, s.first_end, s.first_rank);
  }
}

}  // namespace

SS_DEFINE_PLUGIN("annotations", "GPU time per user annotation and per module; frequent kernel sequences",
                 "Kernels and GPU time per record_function / NVTX annotation (by launch, else by GPU lane) and per "
                 "module, and repeated runs of 3 to 8 consecutive kernels on a stream ranked by the GPU time they "
                 "cover: candidates for CUDA graphs or fusion.",
                 &run)
