// The timeline and memory logic on real traces imported from ../shared/data/traces.
#include <catch2/catch.hpp>

#include <filesystem>

#include "profiler/import/import.h"
#include "storage/profile_reader.h"
#include "tests/support/test_paths.h"
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
