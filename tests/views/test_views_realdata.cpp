// The timeline and memory logic on real traces imported from ../shared/data/traces.
#include <catch2/catch.hpp>

#include <filesystem>
#include <random>

#include "profiler/import/import.h"
#include "storage/profile_reader.h"
#include "tests/support/test_paths.h"
#include "tests/views/lod_compare.h"
#include "views/memory/module_memory_stats.h"
#include "views/timeline/analysis.h"
#include "views/timeline/timeline_controller.h"

using namespace ss;
using namespace ss::timeline;

namespace {
std::vector<std::string> dlrm_files() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(test::trace("kineto-v100-dlrm-8ranks")))
    if (e.path().string().ends_with(".json.gz")) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}
}  // namespace

TEST_CASE("8-rank DLRM trace: collectives link across all ranks, whole-range aggregate counts every kernel",
          "[views][realdata]") {
  if (!test::traces_available()) {
    WARN("traces not available");
    return;
  }
  test::TempDir dir;
  const std::string path = dir.file("dlrm8.ssdb");
  import::ImportOptions quiet;
  quiet.show_progress = false;
  import::import_files(dlrm_files(), path, quiet);
  const Profile p = load_profile(path);
  REQUIRE(p.ranks.size() == 8);

  // Every collective of rank 0 has its 7 peers: 8 sequence numbers, each on all 8 ranks.
  // sqlite3 dlrm8.ssdb "select sequence, count(*) from collectives group by process_group_id, sequence"  -> 0..7, 8 each
  int linked = 0;
  for (std::size_t t = 0; t < p.stream_tracks.size(); ++t) {
    const StreamTrack& st = p.stream_tracks[t];
    if (st.rank != 0) continue;
    for (std::size_t i = 0; i < st.events.size(); ++i) {
      if (st.events[i].category != KernelCategory::Collective) continue;
      const auto peers = collective_peers(p, {TrackKind::Stream, static_cast<std::int32_t>(t), static_cast<std::uint32_t>(i)});
      std::set<int> ranks;
      for (const auto& r : peers) ranks.insert(p.stream_tracks[static_cast<std::size_t>(r.track)].rank);
      CHECK(ranks == std::set<int>{1, 2, 3, 4, 5, 6, 7});
      ++linked;
    }
  }
  CHECK(linked == 8);

  // A range over the whole profile holds every kernel once.
  // python3 -c "import sqlite3;print(sqlite3.connect('dlrm8.ssdb').execute('select count(*) from kernels').fetchone())"  -> 2244
  std::vector<std::int32_t> all;
  for (std::size_t t = 0; t < p.stream_tracks.size(); ++t) all.push_back(static_cast<std::int32_t>(t));
  const Aggregate a = aggregate_range(p, all, p.time_begin, p.time_end);
  CHECK(a.kernel_count == 2244);

  // The draw lists of the whole profile account for every kernel exactly once (fold counts).
  TimelineController c(p);
  c.set_size(1600, 100000);  // every track on screen
  c.fit_all();
  Frame f;
  c.build_frame(f);
  std::int64_t drawn = 0;
  for (const auto& d : f.tracks)
    if (c.tracks()[static_cast<std::size_t>(d.track)].kind == TrackKind::Stream)
      for (const auto& s : d.spans) drawn += s.count;
  CHECK(drawn == 2244);
}

TEST_CASE("2-GPU FSDP Nsight trace: module forward times in the memory view match the ranges table", "[views][realdata]") {
  if (!test::traces_available()) {
    WARN("traces not available");
    return;
  }
  test::TempDir dir;
  const std::string path = dir.file("nsys.ssdb");
  import::ImportOptions quiet;
  quiet.show_progress = false;
  import::import_files({test::trace("nsys-h100-fsdp-2gpu/mfu_2gpu_after.sqlite")}, path, quiet);
  const Profile p = load_profile(path);
  const memview::ModuleMemoryStats s = memview::compute_module_memory(p, 0);
  const std::int32_t m = p.find_module("blocks.10._checkpoint_wrapped_module");
  REQUIRE(m >= 0);
  // sqlite3 nsys.ssdb "select sum(r.duration_ns) from ranges r join modules m on m.id=r.module_id
  //   where r.rank=0 and r.kind=1 and r.phase=1 and m.fqn='blocks.10._checkpoint_wrapped_module'"  -> 17571369
  CHECK(s.modules[static_cast<std::size_t>(m)][memview::kForwardTime] == 17571369);
  // The trace has no memory events and no parameter sizes: those columns are unknown, not zero.
  // sqlite3 nsys.ssdb "select count(*) from memory_events; select max(param_bytes) from modules"  -> 0, 0
  CHECK(s.modules[static_cast<std::size_t>(m)][memview::kActivations] == memview::kMissing);
  CHECK(s.modules[static_cast<std::size_t>(m)][memview::kParamsUnsharded] == memview::kMissing);
  CHECK(s.series.times.empty());
}

TEST_CASE("real traces: the level-of-detail draw lists follow the exact ones on every track at every zoom", "[views][realdata]") {
  if (!test::traces_available()) {
    WARN("traces not available");
    return;
  }
  test::TempDir dir;
  import::ImportOptions quiet;
  quiet.show_progress = false;
  const std::vector<std::vector<std::string>> sources = {
      {test::trace("nsys-h100-fsdp-2gpu/mfu_2gpu_after.sqlite")},
      {test::trace("kineto-a100-ddp/nccl_data.json.gz")},
      {test::trace("kineto-b200-modules/eager_trace.json.gz")},
      dlrm_files(),
  };
  std::mt19937_64 rng(8);
  int tracks = 0, lod_views = 0, frames_checked = 0;
  for (std::size_t si = 0; si < sources.size(); ++si) {
    const std::string path = dir.file("real" + std::to_string(si) + ".ssdb");
    import::import_files(sources[si], path, quiet);
    const Profile p = load_profile(path);
    // Every stream and range track whose ends are sorted, alone: from twice the profile down to a
    // few events on screen, at several widths.
    auto check_track = [&](const auto& ev, const std::string& name) {
      if (ev.size() < 2 || !ends_sorted(ev)) return;
      ++tracks;
      const SpanLod lod = build_span_lod(ev, true);
      const test::CoveredTime covered(ev);
      const double a = static_cast<double>(p.time_begin), whole = static_cast<double>(p.time_end - p.time_begin);
      for (double span = whole * 2; span > 2000; span *= 0.7) {
        Viewport vp;
        vp.width_px = std::vector<double>{16, 60, 300, 1600}[rng() % 4];
        const double start = a - span * 0.5 + static_cast<double>(rng() % 1000) / 1000.0 * whole;
        vp.fit(start, start + span);
        const std::string err = test::lod_mismatch(ev, lod, covered, vp);
        INFO(sources[si][0] << ": " << name << ", " << ev.size() << " events, ns/px " << vp.ns_per_px << " from " << vp.start_ns);
        REQUIRE(err.empty());
        lod_views += lod.applies(vp.ns_per_px);
      }
    };
    for (const StreamTrack& t : p.stream_tracks) check_track(t.events, "stream " + t.name);
    for (const RangeTrack& t : p.range_tracks) check_track(t.events, "ranges depth " + std::to_string(t.depth));

    // Through the controller: each stream and range row of a zoomed-out frame is the
    // level-of-detail draw list where the summaries apply, the exact one elsewhere.
    TimelineController c(p);
    c.set_size(kLabelWidth + 40, 100000);  // narrow: most rows are zoomed out enough
    c.fit_all();
    Frame f;
    c.build_frame(f);
    for (const TrackDraw& d : f.tracks) {
      const Track& t = c.tracks()[static_cast<std::size_t>(d.track)];
      auto check_row = [&](const auto& ev, TimeNs max_duration) {
        const SpanLod lod = build_span_lod(ev, t.ends_sorted);
        INFO(sources[si][0] << ": row " << t.label);
        if (lod.applies(c.viewport().ns_per_px)) {
          CHECK(test::lod_mismatch(ev, test::CoveredTime(ev), c.viewport(), d.spans, &d.density).empty());
          ++frames_checked;
          return;
        }
        std::vector<SpanItem> exact;
        build_span_items(ev, max_duration, t.ends_sorted, c.viewport(), exact);
        REQUIRE(exact.size() == d.spans.size());
        for (std::size_t i = 0; i < exact.size(); ++i) {
          CHECK(exact[i].first == d.spans[i].first);
          CHECK(exact[i].count == d.spans[i].count);
          CHECK(exact[i].x1 == d.spans[i].x1);
        }
      };
      if (t.kind == TrackKind::Stream) {
        const StreamTrack& st = p.stream_tracks[static_cast<std::size_t>(t.index)];
        check_row(st.events, st.max_duration);
      } else if (t.kind == TrackKind::Ranges) {
        const RangeTrack& rt = p.range_tracks[static_cast<std::size_t>(t.index)];
        check_row(rt.events, rt.max_duration);
      }
    }
  }
  CHECK(tracks > 50);
  CHECK(lod_views > 200);
  CHECK(frames_checked > 10);
}
