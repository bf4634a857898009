#include "views/timeline/analysis.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <unordered_map>

#include "storage/collective_match.h"

namespace ss::timeline {

namespace {

std::vector<AggregateRow> finish_rows(std::unordered_map<std::string, AggregateRow>& rows) {
  std::vector<AggregateRow> out;
  double sum = 0;
  for (auto& [name, row] : rows) sum += row.total_ns;
  for (auto& [name, row] : rows) {
    row.name = name;
    row.mean_ns = row.count ? row.total_ns / static_cast<double>(row.count) : 0;
    row.share = sum > 0 ? row.total_ns / sum : 0;
    out.push_back(std::move(row));
  }
  std::sort(out.begin(), out.end(), [](const AggregateRow& a, const AggregateRow& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  return out;
}

bool contains_nocase(std::string_view hay, std::string_view needle) {
  auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != hay.end();
}

}  // namespace

Aggregate aggregate_range(const Profile& p, const std::vector<std::int32_t>& stream_tracks, TimeNs t0, TimeNs t1) {
  Aggregate a;
  a.t0 = std::min(t0, t1);
  a.t1 = std::max(t0, t1);
  std::unordered_map<std::string, AggregateRow> kernels, modules;
  for (std::int32_t ti : stream_tracks) {
    const StreamTrack& t = p.stream_tracks[static_cast<std::size_t>(ti)];
    for_each_in_window(t.events, t.max_duration, a.t0, a.t1, [&](const KernelEvent& e) {
      const double inside = static_cast<double>(std::min(e.end, a.t1) - std::max(e.start, a.t0));
      auto& k = kernels[std::string(p.strings[e.name])];
      ++k.count;
      k.total_ns += inside;
      const std::string module =
          e.module >= 0 ? p.modules[static_cast<std::size_t>(e.module)].fqn : std::string("(no module)");
      auto& m = modules[module.empty() ? std::string("(root)") : module];
      ++m.count;
      m.total_ns += inside;
      ++a.kernel_count;
    });
  }
  a.by_kernel = finish_rows(kernels);
  a.by_module = finish_rows(modules);
  return a;
}

EventInfo event_info(const Profile& p, const EventRef& ref) {
  if (ref.kind == TrackKind::Stream) {
    const KernelEvent& e = p.stream_tracks[static_cast<std::size_t>(ref.track)].events[ref.index];
    return {e.start, e.end, e.name, e.module, e.id};
  }
  const RangeEvent& e = p.range_tracks[static_cast<std::size_t>(ref.track)].events[ref.index];
  return {e.start, e.end, e.name, e.module, e.id};
}

std::vector<EventRef> find_events(const Profile& p, std::string_view query) {
  std::vector<EventRef> out;
  if (query.empty()) return out;
  // Match each distinct string once, then test events by id.
  std::vector<char> match(p.strings.size(), 0);
  for (std::uint32_t i = 0; i < p.strings.size(); ++i) match[i] = contains_nocase(p.strings[i], query) ? 1 : 0;
  auto matches = [&](std::uint32_t name) { return name < match.size() && match[name]; };
  std::vector<std::pair<TimeNs, EventRef>> hits;
  for (std::size_t t = 0; t < p.stream_tracks.size(); ++t) {
    const auto& ev = p.stream_tracks[t].events;
    for (std::size_t i = 0; i < ev.size(); ++i)
      if (matches(ev[i].name))
        hits.push_back({ev[i].start, {TrackKind::Stream, static_cast<std::int32_t>(t), static_cast<std::uint32_t>(i)}});
  }
  // A range that only wraps a device event of the same name (a CPU trace's record_function
  // "gloo:all_gather" around the collective it times, an NVTX range named like its kernel) is
  // the same match twice: the device event is kept.
  std::map<std::pair<int, std::uint32_t>, std::vector<std::pair<TimeNs, TimeNs>>> device;  // (rank, name) -> spans by start
  for (const auto& [start, ref] : hits) {
    const StreamTrack& st = p.stream_tracks[static_cast<std::size_t>(ref.track)];
    const KernelEvent& e = st.events[ref.index];
    device[{st.rank, e.name}].emplace_back(e.start, e.end);
  }
  for (auto& [key, spans] : device) std::sort(spans.begin(), spans.end());
  const auto wraps_device_event = [&](int rank, const RangeEvent& r) {
    const auto it = device.find({rank, r.name});
    if (it == device.end()) return false;
    const auto& spans = it->second;
    // The first device event starting at or after the range's start, and the one before it.
    auto at = std::lower_bound(spans.begin(), spans.end(), std::make_pair(r.start, TimeNs{0}));
    for (auto c : {at, at == spans.begin() ? spans.end() : std::prev(at)})
      if (c != spans.end() && c->first < r.end && r.start < c->second) return true;
    return false;
  };
  for (std::size_t t = 0; t < p.range_tracks.size(); ++t) {
    const auto& ev = p.range_tracks[t].events;
    for (std::size_t i = 0; i < ev.size(); ++i)
      if (matches(ev[i].name) && !wraps_device_event(p.range_tracks[t].rank, ev[i]))
        hits.push_back({ev[i].start, {TrackKind::Ranges, static_cast<std::int32_t>(t), static_cast<std::uint32_t>(i)}});
  }
  std::stable_sort(hits.begin(), hits.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  out.reserve(hits.size());
  for (auto& h : hits) out.push_back(h.second);
  return out;
}

std::vector<EventRef> collective_peers(const Profile& p, const EventRef& kernel) {
  std::vector<EventRef> out;
  if (kernel.kind != TrackKind::Stream || !kernel.valid()) return out;
  const KernelEvent& k = p.stream_tracks[static_cast<std::size_t>(kernel.track)].events[kernel.index];
  const auto self = std::find_if(p.collectives.begin(), p.collectives.end(),
                                 [&](const CollectiveEvent& c) { return c.kernel_id == static_cast<std::int64_t>(k.id); });
  if (self == p.collectives.end() || self->sequence < 0) return out;
  for (const CollectiveEvent& c : p.collectives) {
    if (&c == &*self || c.process_group != self->process_group || c.sequence != self->sequence || c.kernel_id < 0 ||
        !same_operation(self->type, self->bytes, c.type, c.bytes))  // another operation at that number: no peer
      continue;
    const RankModel* r = p.rank(c.rank);
    if (!r) continue;
    for (std::int32_t ti : r->stream_tracks) {
      const StreamTrack& t = p.stream_tracks[static_cast<std::size_t>(ti)];
      auto [lo, hi] = start_range(t.events, c.start - 1, c.end + 1);
      for (std::size_t i = lo; i < hi; ++i)
        if (t.events[i].id == static_cast<std::uint64_t>(c.kernel_id)) out.push_back({TrackKind::Stream, ti, static_cast<std::uint32_t>(i)});
      // The kernel may start slightly before the collective's recorded start.
      if (lo == hi) {
        auto [a, b] = start_range(t.events, c.start - t.max_duration, c.end);
        for (std::size_t i = a; i < b; ++i)
          if (t.events[i].id == static_cast<std::uint64_t>(c.kernel_id)) out.push_back({TrackKind::Stream, ti, static_cast<std::uint32_t>(i)});
      }
    }
  }
  return out;
}

}  // namespace ss::timeline
