#include "views/timeline/tracks.h"

#include <algorithm>

#include "views/timeline/draw_items.h"

namespace ss::timeline {

float Track::height() const {
  if (!laid_out()) return 0;
  if (collapsed) return kCollapsedHeight;
  return kind == TrackKind::Memory || kind == TrackKind::Counter ? kCounterHeight : kRowHeight;
}

void set_group_open(std::vector<Track>& tracks, std::size_t head, bool open) {
  if (head >= tracks.size() || tracks[head].group < 0) return;
  tracks[head].group_open = open;
  for (std::size_t i = head + 1; i < tracks.size(); ++i)
    if (tracks[i].group == tracks[head].group) tracks[i].hidden = !open;
}

void set_rank_open(std::vector<Track>& tracks, std::size_t head, bool open, const std::vector<bool>& keep) {
  if (head >= tracks.size()) return;
  tracks[head].rank_head = true;
  tracks[head].rank_open = open;
  for (std::size_t i = 0; i < tracks.size(); ++i)
    if (i != head && tracks[i].rank == tracks[head].rank) tracks[i].folded = !open && !(i < keep.size() && keep[i]);
}

void open_all_ranks(std::vector<Track>& tracks) {
  for (std::size_t i = 0; i < tracks.size(); ++i)
    if (tracks[i].rank_head && !tracks[i].rank_open) set_rank_open(tracks, i, true, {});
}

namespace {

// What a stream is called on its row: a stream named for what it carries (a simulated profile's
// "nccl PP send/recv", "host-to-device copies (offload)", a CPU trace's "gloo worker 6217") keeps
// its name, without the thread's own name that a CPU trace adds ("CPU thread 6208 (thread 6208
// (python3))" reads "CPU thread 6208"); importers' and the collector's "stream 7" / "NCCL stream
// 7" and names that only repeat the kind read as the kind and id.
std::string stream_label(const StreamTrack& st) {
  const std::string kind(to_string(st.kind));
  const std::string id = "stream " + std::to_string(st.native_id);
  const bool only_id = st.name.size() >= id.size() && st.name.compare(st.name.size() - id.size(), id.size(), id) == 0;
  if (st.name.empty() || st.name == kind || only_id) return kind + " stream " + std::to_string(st.native_id);
  if (const auto at = st.name.find(" (thread " + std::to_string(st.native_id) + " ("); at != std::string::npos) return st.name.substr(0, at);
  return st.name;
}

bool has_module_range(const RangeTrack& rt) {
  for (const RangeEvent& e : rt.events)
    if (e.kind == RangeKind::Module) return true;
  return false;
}

}  // namespace

std::vector<Track> build_tracks(const Profile& p) {
  std::vector<Track> out;
  std::int32_t groups = 0;
  for (std::size_t ri = 0; ri < p.ranks.size(); ++ri) {
    const RankModel& r = p.ranks[ri];
    const int rank = r.info.rank;
    const std::string prefix = "rank " + std::to_string(rank) + " ";
    const auto range_track = [&](std::int32_t t) -> const RangeTrack& { return p.range_tracks[static_cast<std::size_t>(t)]; };
    // Threads with structure lanes: named only when there are several (the main thread and the
    // autograd thread of a GPU recording).
    std::vector<RowId> threads;
    for (std::int32_t t : r.range_tracks)
      if (!range_track(t).operators && range_track(t).stream_id == kNoRow &&
          std::find(threads.begin(), threads.end(), range_track(t).thread_id) == threads.end())
        threads.push_back(range_track(t).thread_id);
    const auto add_range = [&](std::int32_t t, std::string label) {
      Track tr{TrackKind::Ranges, rank, t, std::move(label)};
      tr.ends_sorted = ends_sorted(range_track(t).events);
      out.push_back(std::move(tr));
    };
    const auto add_streams = [&](auto wanted) {
      for (std::int32_t t : r.stream_tracks) {
        const StreamTrack& st = p.stream_tracks[static_cast<std::size_t>(t)];
        if (!wanted(st.kind)) continue;
        Track tr{TrackKind::Stream, rank, t, prefix + stream_label(st)};
        tr.ends_sorted = ends_sorted(st.events);
        out.push_back(std::move(tr));
      }
    };

    if (!r.steps.empty()) out.push_back({TrackKind::Steps, rank, static_cast<std::int32_t>(ri), prefix + "steps"});
    // Modules and annotations on CPU threads.
    for (std::int32_t t : r.range_tracks) {
      const RangeTrack& rt = range_track(t);
      if (rt.operators || rt.stream_id != kNoRow) continue;
      std::string label = prefix + (has_module_range(rt) ? "modules" : "annotations");
      if (threads.size() > 1) label += " t" + std::to_string(rt.thread_id);
      if (rt.depth > 0) label += " d" + std::to_string(rt.depth);
      add_range(t, std::move(label));
    }
    add_streams([](StreamKind k) { return k == StreamKind::Compute; });
    add_streams([](StreamKind k) { return k == StreamKind::Nccl; });
    // Ranges drawn on GPU streams (Kineto's gpu_user_annotation).
    for (std::int32_t t : r.range_tracks) {
      const RangeTrack& rt = range_track(t);
      if (rt.stream_id == kNoRow) continue;
      add_range(t, prefix + "gpu ranges s" + std::to_string(rt.stream_id) + (rt.depth > 0 ? " d" + std::to_string(rt.depth) : ""));
    }
    add_streams([](StreamKind k) { return k == StreamKind::Copy; });
    add_streams([](StreamKind k) { return k != StreamKind::Compute && k != StreamKind::Nccl && k != StreamKind::Copy; });
    if (!r.memory.empty()) out.push_back({TrackKind::Memory, rank, static_cast<std::int32_t>(ri), prefix + "memory"});
    // Framework operators, one folded group per thread, last.
    for (std::size_t i = 0; i < r.range_tracks.size();) {
      const RangeTrack& first = range_track(r.range_tracks[i]);
      if (!first.operators || first.stream_id != kNoRow) {
        ++i;
        continue;
      }
      std::size_t end = i;
      while (end < r.range_tracks.size() && range_track(r.range_tracks[end]).operators &&
             range_track(r.range_tracks[end]).thread_id == first.thread_id && range_track(r.range_tracks[end]).stream_id == kNoRow)
        ++end;
      const std::string name = prefix + "operators" + (threads.size() > 1 ? " t" + std::to_string(first.thread_id) : "");
      const std::size_t head = out.size();
      for (std::size_t k = i; k < end; ++k) {
        const RangeTrack& rt = range_track(r.range_tracks[k]);
        add_range(r.range_tracks[k], rt.depth == 0 ? name : name + " d" + std::to_string(rt.depth));
        out.back().group = groups;
        out.back().hidden = k > i;
      }
      out[head].group_size = static_cast<int>(end - i);
      if (end - i > 1) out[head].label += " (" + std::to_string(end - i) + " rows)";
      ++groups;
      i = end;
    }
  }
  return out;
}

std::vector<TrackRect> layout_tracks(const std::vector<Track>& tracks, float scroll_y) {
  std::vector<TrackRect> out;
  float y = 0;
  for (std::size_t i = 0; i < tracks.size(); ++i)
    if (tracks[i].pinned && tracks[i].laid_out()) {
      out.push_back({static_cast<std::int32_t>(i), y, tracks[i].height()});
      y += tracks[i].height();
    }
  const float pinned_height = y;
  y = pinned_height - scroll_y;
  for (std::size_t i = 0; i < tracks.size(); ++i)
    if (!tracks[i].pinned && tracks[i].laid_out()) {
      out.push_back({static_cast<std::int32_t>(i), y, tracks[i].height()});
      y += tracks[i].height();
    }
  return out;
}

float total_tracks_height(const std::vector<Track>& tracks) {
  float h = 0;
  for (const auto& t : tracks) h += t.height();
  return h;
}

}  // namespace ss::timeline
