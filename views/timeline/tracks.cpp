#include "views/timeline/tracks.h"

#include "views/timeline/draw_items.h"

namespace ss::timeline {

float Track::height() const {
  if (collapsed) return kCollapsedHeight;
  return kind == TrackKind::Memory || kind == TrackKind::Counter ? kCounterHeight : kRowHeight;
}

namespace {
int stream_order(StreamKind k) {
  switch (k) {
    case StreamKind::Compute: return 0;
    case StreamKind::Nccl: return 1;
    case StreamKind::Copy: return 2;
    default: return 3;
  }
}
}  // namespace

std::vector<Track> build_tracks(const Profile& p) {
  std::vector<Track> out;
  for (std::size_t ri = 0; ri < p.ranks.size(); ++ri) {
    const RankModel& r = p.ranks[ri];
    const int rank = r.info.rank;
    const std::string prefix = "rank " + std::to_string(rank) + " ";
    if (!r.steps.empty()) out.push_back({TrackKind::Steps, rank, static_cast<std::int32_t>(ri), prefix + "steps"});
    for (std::int32_t t : r.range_tracks) {
      const RangeTrack& rt = p.range_tracks[static_cast<std::size_t>(t)];
      std::string lane = rt.stream_id != kNoRow ? "gpu ranges s" + std::to_string(rt.stream_id)
                                                : "cpu ranges t" + std::to_string(rt.thread_id);
      Track tr{TrackKind::Ranges, rank, t, prefix + lane + " d" + std::to_string(rt.depth)};
      tr.ends_sorted = ends_sorted(rt.events);
      out.push_back(std::move(tr));
    }
    for (int order = 0; order < 4; ++order)
      for (std::int32_t t : r.stream_tracks) {
        const StreamTrack& st = p.stream_tracks[static_cast<std::size_t>(t)];
        if (stream_order(st.kind) != order) continue;
        // A stream named for what it carries (a simulated profile's "nccl PP send/recv",
        // "host-to-device copies (offload)") is labelled by that name; importers' and the
        // collector's "stream 7" / "NCCL stream 7" and names that only repeat the kind keep the
        // kind and id.
        const std::string kind(to_string(st.kind));
        const std::string id = "stream " + std::to_string(st.native_id);
        const bool only_id = st.name.size() >= id.size() && st.name.compare(st.name.size() - id.size(), id.size(), id) == 0;
        const bool named = !st.name.empty() && st.name != kind && !only_id;
        std::string label = prefix + (named ? st.name : kind + " stream " + std::to_string(st.native_id));
        Track tr{TrackKind::Stream, rank, t, std::move(label)};
        tr.ends_sorted = ends_sorted(st.events);
        out.push_back(std::move(tr));
      }
    if (!r.memory.empty()) out.push_back({TrackKind::Memory, rank, static_cast<std::int32_t>(ri), prefix + "memory"});
  }
  return out;
}

std::vector<TrackRect> layout_tracks(const std::vector<Track>& tracks, float scroll_y) {
  std::vector<TrackRect> out;
  float y = 0;
  for (std::size_t i = 0; i < tracks.size(); ++i)
    if (tracks[i].pinned) {
      out.push_back({static_cast<std::int32_t>(i), y, tracks[i].height()});
      y += tracks[i].height();
    }
  const float pinned_height = y;
  y = pinned_height - scroll_y;
  for (std::size_t i = 0; i < tracks.size(); ++i)
    if (!tracks[i].pinned) {
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
